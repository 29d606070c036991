// The attention inputs of a decoder step from one fused q/k/v matmul, in one pass: x [L, C] with
// C = (Hq + 2 Hkv) hd, row l at position pos0 + l. Query heads are rotated into q [Hq, L, hd],
// key heads rotated into the key cache [Hkv, ctx, hd] at rows pos0 .. pos0 + L - 1, value heads
// copied into the value cache likewise. The rotation is src/kernels/rope.wgsl's: feature d < rot
// pairs with (2j, 2j + 1) when interleaved, else (j, j + rot / 2); the angle position *
// inv_freq[j] is rounded to f32 as transformers computes it. All f32; offsets in elements (the
// caches' point at row pos0 of head 0).

struct Params {
    L: u32, hd: u32, Hq: u32, Hkv: u32,
    rot: u32, interleaved: u32, pos0: u32, ctx: u32,
    off_x: u32, off_q: u32, off_k: u32, off_v: u32,
    af: f32, n: u32, pad0: u32, pad1: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(3) var<storage, read_write> q: array<f32>;
@group(0) @binding(4) var<storage, read_write> kc: array<f32>;
@group(0) @binding(5) var<storage, read_write> vc: array<f32>;

// As rope.wgsl: the angle reduced to [-pi, pi] in two steps first.
fn cos_sin(a: f32) -> vec2<f32> {
    let k = round(a * 0.15915494309189535);
    let r = (a - k * 6.28125) - k * 0.0019353071795864769;
    return vec2<f32>(cos(r), sin(r));
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * groups.x) * 128u + lid;
    if (i >= p.n) { return; }
    let C = (p.Hq + 2u * p.Hkv) * p.hd;
    let l = i / C;
    let c = i - l * C;
    let head = c / p.hd;
    let d = c - head * p.hd;
    var v = x[p.off_x + i];
    if (head < p.Hq + p.Hkv && d < p.rot) {
        let half = p.rot / 2u;
        var f: u32;
        var first: bool;
        var partner: u32;
        if (p.interleaved != 0u) {
            f = d / 2u;
            first = (d & 1u) == 0u;
            partner = select(i - 1u, i + 1u, first);
        } else {
            f = d % half;
            first = d < half;
            partner = select(i - half, i + half, first);
        }
        let w = x[p.off_x + partner];
        let cs = cos_sin(f32(p.pos0 + l) * inv_freq[f]) * p.af;
        v = select(v * cs.x + w * cs.y, v * cs.x - w * cs.y, first);
    }
    if (head < p.Hq) {
        q[p.off_q + (head * p.L + l) * p.hd + d] = v;
    } else if (head < p.Hq + p.Hkv) {
        kc[p.off_k + ((head - p.Hq) * p.ctx + l) * p.hd + d] = v;
    } else {
        vc[p.off_v + ((head - p.Hq - p.Hkv) * p.ctx + l) * p.hd + d] = v;
    }
}
