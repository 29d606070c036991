// An operand of matmul_tcd.wgsl as rows of f16, two a word: element (r, k) of y ([Rp][Kp], Kp even)
// is X[off + r * sr + k * sk] for r < R and k < K, else 0 (the padding makes every fragment load of
// matmul_tcd.wgsl fall inside whole tiles). Any strides and dtype: the prelude's ldX reads X as f32.
// f32 values past f16's range become infinities, as in matmul_tc.wgsl's tiles.

struct HalfParams {
    R: u32, K: u32, Rp: u32, Kp: u32,
    off: u32, sr: u32, sk: u32, gx: u32, // gx: invocations along x of the dispatch grid
};

@group(0) @binding(0) var<uniform> h: HalfParams;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * h.gx; // word i of y
    let wr = h.Kp / 2u;
    if (i >= h.Rp * wr) { return; }
    let r = i / wr;
    let k = (i % wr) * 2u;
    var v = vec2<f32>(0.0);
    if (r < h.R) {
        let o = h.off + r * h.sr;
        if (k < h.K) { v.x = ldX(o + k * h.sk); }
        if (k + 1u < h.K) { v.y = ldX(o + (k + 1u) * h.sk); }
    }
    y[i] = pack2x16float(v);
}
