// Rotary position embedding into a contiguous output of x's shape [..., L, D]. Each invocation
// writes one whole output word (PACK elements). Feature d < rot rotates with its partner: (2j,
// 2j + 1) when interleaved, else (j, j + rot / 2), by the angle position * inv_freq[j], the
// product rounded to f32 as transformers computes it; features d >= rot are copied.
// The prelude (src/ops/rope.c) supplies lib_index.wgsl, PACK, CO, the loaders ldx (x, f32) and
// ldp (positions, i32) and the storer st.

struct Params {
    n: u32,          // output elements
    D: u32,
    rot: u32,
    interleaved: u32,
    off_x: u32,
    off_p: u32,
    af: f32,         // attention factor (YaRN), 1 otherwise
    pad: u32,
    lx: Layout,      // x
    lp: Layout,      // positions broadcast to x's shape (stride 0 along D)
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> pos: array<u32>;
@group(0) @binding(3) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

// cos and sin of an f32 angle: reduced to [-pi, pi] first in two steps (2 pi split into a head
// exact in f32 and a tail), so large positions keep the accuracy of the small-angle case.
fn cos_sin(a: f32) -> vec2<f32> {
    let k = round(a * 0.15915494309189535);
    let r = (a - k * 6.28125) - k * 0.0019353071795864769;
    return vec2<f32>(cos(r), sin(r));
}

fn rope_elem(j: u32) -> f32 {
    let d = j % p.D;
    let v = ldx(layout_index(p.lx, j) + p.off_x);
    if (d >= p.rot) { return v; }
    let half = p.rot / 2u;
    var f: u32;
    var partner: u32; // element index of the partner
    var first: bool;
    if (p.interleaved != 0u) {
        f = d / 2u;
        first = (d & 1u) == 0u;
        partner = select(j - 1u, j + 1u, first);
    } else {
        f = d % half;
        first = d < half;
        partner = select(j - half, j + half, first);
    }
    let w = ldx(layout_index(p.lx, partner) + p.off_x);
    let position = f32(ldp(layout_index(p.lp, j) + p.off_p));
    let cs = cos_sin(position * inv_freq[f]) * p.af;
    // (a, b) -> (a cos - b sin, b cos + a sin)
    return select(v * cs.x + w * cs.y, v * cs.x - w * cs.y, first);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * groups.x) * WG + lid;
    let first = w * PACK;
    if (first >= p.n) { return; }
    var v: array<CO, 4>;
    for (var k = 0u; k < PACK; k++) {
        if (first + k < p.n) { v[k] = rope_elem(first + k); }
    }
    st(w, v);
}
