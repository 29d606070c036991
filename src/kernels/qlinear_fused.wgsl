// One token through a quantized linear layer with what surrounds it in a decoder step, in one
// pass over the weights (the quantized twin of gemv_fused.wgsl):
//   out[n] = scale * dot(W[n, :], pro(x)) + bias[n] + res[n]
// where pro(x) is x (PRO 0), gamma * x with scale = 1 / sqrt(mean(x^2) + eps) (PRO 1: RMSNorm;
// every row's lanes see all of x, so the sum of squares comes with the dot product), or
// silu(x[:K]) * x[K:] (PRO 2: SwiGLU, x holding 2K values). W [N, K] stays in its GGUF blocks and
// is read as the `gemv` entry of qlinear.wgsl reads it: 32 invocations a row, WG / 32 rows a
// workgroup, consecutive 8-element pieces across a row's invocations, four pieces in flight.
// The prelude (src/ops/qlinear.c) supplies FMT, SG, sg_sum, WG as qlinear.wgsl's prelude does,
// `const PRO: u32`, `fn ldBias(i: u32) -> f32`, and the block decoders of qlinear.wgsl (rd32 ..
// piece, which read the `w` binding declared here).

struct Params {
    N: u32,         // weight rows (outputs)
    K: u32,         // columns, a multiple of 32
    row_bytes: u32, // bytes per weight row
    flags: u32,     // 1 bias, 2 res
    w_off: u32,     // byte offset of row 0 within the w binding
    off_x: u32,     // vec4 index of x[0] within the x binding
    off_g: u32,     // vec4 index of gamma[0] within the gam binding
    off_b: u32,     // element index of bias[0]
    off_r: u32,     // element index of res[0]
    off_o: u32,     // element index of out[0]
    eps: f32,
    units: u32,     // 32-element units per row: K / 32
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> gam: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> bias: array<u32>;
@group(0) @binding(5) var<storage, read> res: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

const TPR: u32 = 32u;      // invocations per row
const RPW: u32 = WG / TPR; // rows per workgroup (8 at 256, 4 at 128)

fn silu4(v: vec4<f32>) -> vec4<f32> { return v / (vec4<f32>(1.0) + exp(-v)); }

// The dot product of piece `it` (columns 8 it .. 8 it + 7) with pro(x) there, and its share of
// the sum of squares.
fn term(pc: Piece, it: u32) -> vec2<f32> {
    let xi = p.off_x + 2u * it;
    var x0 = x[xi];
    var x1 = x[xi + 1u];
    var ss = 0.0;
    if (PRO == 1u) {
        ss = dot(x0, x0) + dot(x1, x1);
        x0 = x0 * gam[p.off_g + 2u * it];
        x1 = x1 * gam[p.off_g + 2u * it + 1u];
    } else if (PRO == 2u) {
        let up = xi + p.K / 4u;
        x0 = silu4(x0) * x[up];
        x1 = silu4(x1) * x[up + 1u];
    }
    return vec2<f32>(dot(pc.a, x0) + dot(pc.b, x1), ss);
}

var<workgroup> red: array<vec2<f32>, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let lane = lid % TPR;
    let row = (wid.x + wid.y * nwg.x) * RPW + lid / TPR;
    var acc = vec2<f32>(0.0); // (dot, sum of squares)
    if (row < p.N) {
        let rb = p.w_off + row * p.row_bytes;
        let items = p.units * 4u;
        var it = lane;
        for (; it + 3u * TPR < items; it += 4u * TPR) { // the four pieces' loads issue before any is used
            let i1 = it + TPR;
            let i2 = it + 2u * TPR;
            let i3 = it + 3u * TPR;
            let p0 = piece(rb, it >> 2u, it & 3u);
            let p1 = piece(rb, i1 >> 2u, i1 & 3u);
            let p2 = piece(rb, i2 >> 2u, i2 & 3u);
            let p3 = piece(rb, i3 >> 2u, i3 & 3u);
            acc += (term(p0, it) + term(p1, i1)) + (term(p2, i2) + term(p3, i3));
        }
        for (; it < items; it += TPR) { acc += term(piece(rb, it >> 2u, it & 3u), it); }
    }
    // subgroups of SG invocations sum first; the row's first invocation adds their 32 / SG sums
    red[lid] = vec2<f32>(sg_sum(acc.x), sg_sum(acc.y));
    workgroupBarrier();
    if (row < p.N && lane == 0u) {
        var t = vec2<f32>(0.0);
        for (var k = 0u; k < TPR; k += SG) { t += red[lid + k]; }
        var v = t.x;
        if (PRO == 1u) { v = v * inverseSqrt(t.y / f32(p.K) + p.eps); }
        if ((p.flags & 1u) != 0u) { v += ldBias(p.off_b + row); }
        if ((p.flags & 2u) != 0u) { v += res[p.off_r + row]; }
        out[p.off_o + row] = v;
    }
}
