// One token through a quantized linear layer with what surrounds it in a decoder step, in one
// pass over the weights (the quantized twin of fused_linear.wgsl):
//   out[n] = scale * dot(W[n, :], pro(x)) + bias[n] + res[n]
// where pro(x) is x (PRO 0), gamma * x with scale = 1 / sqrt(mean(x^2) + eps) (PRO 1: RMSNorm;
// every row's lanes see all of x, so the sum of squares comes with the dot product), or
// silu(x[:K]) * x[K:] (PRO 2: SwiGLU, x holding 2K values). W [N, K] stays in its GGUF blocks and
// is read as the `gemv` entry of qlinear.wgsl reads it: 32 invocations a row, WG / 32 rows a
// workgroup, consecutive 8-element pieces across a row's invocations, four pieces in flight.
// With a prologue, each step of 1024 columns first stages pro(x) in workgroup memory (once for
// the workgroup's rows, not once a row: SwiGLU's exp per element per row would outweigh the
// dequantisation on the H200's special-function units), the step's weight loads already issued.
// The prelude (src/ops/qlinear.c) supplies `const FMT: u32` and `const WG: u32` as qlinear.wgsl's
// does, `const SG: u32` (the subgroup size when fixed and at most 32, else 1) with
// `fn sg_sum(v: f32) -> f32` (lib_subgroup.wgsl's "sg sum" section, subgroupAdd, or "no sg sum"),
// `const PRO: u32`, `fn ldBias(i: u32) -> f32`, and qlinear.wgsl's "decoders" section (rd32 ..
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
const STEP: u32 = 4u * TPR; // pieces of a row per step: 128, 1024 columns, 256 vec4s of x

fn silu4(v: vec4<f32>) -> vec4<f32> { return v / (vec4<f32>(1.0) + exp(-v)); }

fn dot8(pc: Piece, x0: vec4<f32>, x1: vec4<f32>) -> f32 { return dot(pc.a, x0) + dot(pc.b, x1); }

const ZERO = Piece(vec4<f32>(0.0), vec4<f32>(0.0));

// pro(x) of a step's 1024 columns, computed once a workgroup rather than once a row: the
// prologue's exp (SwiGLU) and products are then no more than the dequantisation's work. Two
// buffers, steps alternating, so one barrier a step separates writes from reads.
var<workgroup> xs: array<vec4<f32>, 512>;
var<workgroup> red: array<vec2<f32>, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let lane = lid % TPR;
    let row = (wid.x + wid.y * nwg.x) * RPW + lid / TPR;
    let live = row < p.N;
    let rb = p.w_off + row * p.row_bytes;
    let items = p.units * 4u;
    var acc = 0.0; // this invocation's share of the row's dot product
    var ssq = 0.0; // its share of x's sum of squares (PRO 1), over the columns it stages
    if (PRO == 0u) { // x as it is: read straight from the binding, as qlinear.wgsl's gemv
        if (live) {
            var it = lane;
            for (; it + 3u * TPR < items; it += STEP) { // the four pieces' loads issue before any is used
                let i1 = it + TPR;
                let i2 = it + 2u * TPR;
                let i3 = it + 3u * TPR;
                let p0 = piece(rb, it >> 2u, it & 3u);
                let p1 = piece(rb, i1 >> 2u, i1 & 3u);
                let p2 = piece(rb, i2 >> 2u, i2 & 3u);
                let p3 = piece(rb, i3 >> 2u, i3 & 3u);
                let xi = p.off_x + 2u * it;
                acc += (dot8(p0, x[xi], x[xi + 1u]) + dot8(p1, x[xi + 2u * TPR], x[xi + 2u * TPR + 1u])) +
                       (dot8(p2, x[xi + 4u * TPR], x[xi + 4u * TPR + 1u]) + dot8(p3, x[xi + 6u * TPR], x[xi + 6u * TPR + 1u]));
            }
            for (; it < items; it += TPR) { acc += dot8(piece(rb, it >> 2u, it & 3u), x[p.off_x + 2u * it], x[p.off_x + 2u * it + 1u]); }
        }
    } else {
        let kv = p.K / 4u; // vec4s of x per half
        let steps = (items + STEP - 1u) / STEP;
        for (var s = 0u; s < steps; s++) {
            // this invocation's four pieces of the step, loads issued before the prologue's work
            let it = s * STEP + lane;
            var p0 = ZERO;
            var p1 = ZERO;
            var p2 = ZERO;
            var p3 = ZERO;
            let i1 = it + TPR;
            let i2 = it + 2u * TPR;
            let i3 = it + 3u * TPR;
            if (live && i3 < items) {
                p0 = piece(rb, it >> 2u, it & 3u);
                p1 = piece(rb, i1 >> 2u, i1 & 3u);
                p2 = piece(rb, i2 >> 2u, i2 & 3u);
                p3 = piece(rb, i3 >> 2u, i3 & 3u);
            } else if (live) { // the last, partial step
                if (it < items) { p0 = piece(rb, it >> 2u, it & 3u); }
                if (i1 < items) { p1 = piece(rb, i1 >> 2u, i1 & 3u); }
                if (i2 < items) { p2 = piece(rb, i2 >> 2u, i2 & 3u); }
            }
            let buf = (s & 1u) * 256u; // step s - 2 read this half, before step s - 1's barrier
            for (var j = lid; j < 256u; j += WG) {
                let c = s * 256u + j;
                var v = vec4<f32>(0.0);
                if (c < kv) {
                    v = x[p.off_x + c];
                    if (PRO == 1u) {
                        ssq += dot(v, v);
                        v = v * gam[p.off_g + c];
                    } else {
                        v = silu4(v) * x[p.off_x + kv + c];
                    }
                }
                xs[buf + j] = v;
            }
            workgroupBarrier();
            let l = buf + 2u * lane;
            acc += (dot8(p0, xs[l], xs[l + 1u]) + dot8(p1, xs[l + 2u * TPR], xs[l + 2u * TPR + 1u])) +
                   (dot8(p2, xs[l + 4u * TPR], xs[l + 4u * TPR + 1u]) + dot8(p3, xs[l + 6u * TPR], xs[l + 6u * TPR + 1u]));
        }
    }
    // subgroups of SG invocations sum first; the row's first invocation adds its 32 / SG dot
    // sums and the whole workgroup's WG / SG sums of squares
    red[lid] = vec2<f32>(sg_sum(acc), sg_sum(ssq));
    workgroupBarrier();
    if (live && lane == 0u) {
        var v = 0.0;
        for (var k = 0u; k < TPR; k += SG) { v += red[lid + k].x; }
        if (PRO == 1u) {
            var ss = 0.0;
            for (var k = 0u; k < WG; k += SG) { ss += red[k].y; }
            v = v * inverseSqrt(ss / f32(p.K) + p.eps);
        }
        if ((p.flags & 1u) != 0u) { v += ldBias(p.off_b + row); }
        if ((p.flags & 2u) != 0u) { v += res[p.off_r + row]; }
        out[p.off_o + row] = v;
    }
}
