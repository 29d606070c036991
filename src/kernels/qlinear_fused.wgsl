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
    tpr: u32,       // lanes a row (entry `blocks` only)
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

// ---- blocks: a lane per whole 32-element block (Q8_0 and Q4_0 only) ----
// The entry `blocks` (WGT_QLINEAR_BLOCKS, src/ops/qlinear.c) reads W differently from `main`: each
// lane takes whole blocks (u = lane, lane + p.tpr, ...), each block with the aligned words that
// hold it (9 for Q8_0's 34 bytes, 5 for Q4_0's 18: a third to a fifth of piece()'s loads, none
// unaligned), four blocks' loads in flight. p.tpr lanes a row (a power of two from 32 to WG), WG /
// p.tpr rows a workgroup: the host lowers the rows a workgroup so that rows of few outputs still
// give every SM work. The prologue runs per lane on the columns of its blocks (x from the binding,
// as fused_linear.wgsl's term), or is staged once a workgroup (XS below). Blocks start at even bytes
// (the op checks the weight's offset): a block's first word holds its f16 scale in the low half
// (the block at a multiple of 4) or in the high half (2 bytes past one).

// ---- block words ----
// (also qlinear_qkv_rope.wgsl's, whose prelude pastes this section: it reads the `w` binding, an
// array<u32>, and qlinear.wgsl's decoders' FMT, i8x4 and nib4)
struct BlockWords { v: array<u32, 9> };

// The words w[a .. a + 8] (Q8_0) or w[a .. a + 4] (Q4_0) around the block at byte blk.
fn blk_load(blk: u32) -> BlockWords {
    let a = blk >> 2u;
    var r: BlockWords;
    r.v[0] = w[a]; r.v[1] = w[a + 1u]; r.v[2] = w[a + 2u]; r.v[3] = w[a + 3u]; r.v[4] = w[a + 4u];
    if (FMT == Q8_0) {
        r.v[5] = w[a + 5u]; r.v[6] = w[a + 6u]; r.v[7] = w[a + 7u]; r.v[8] = w[a + 8u];
    }
    return r;
}

// The quant word whose bytes start 2 bytes into word a (hi false) or at word b (hi true): bytes
// 2 + 4i .. 5 + 4i of a block come from its loaded words i and i + 1.
fn blk_q(a: u32, b: u32, hi: bool) -> u32 { return select((a >> 16u) | (b << 16u), b, hi); }

fn blk_scale(w0: u32, hi: bool) -> f32 { return unpack2x16float(select(w0 & 0xffffu, w0 >> 16u, hi)).x; }

// The dot product of one block (words b at byte blk) with x's 8 vec4s of its columns: the quants'
// sum scaled once (quant.c's q * d or (nibble - 8) * d, the scale factored out of the sum).
fn blk_dot_x(b: BlockWords, blk: u32, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>, x4: vec4<f32>,
             x5: vec4<f32>, x6: vec4<f32>, x7: vec4<f32>) -> f32 {
    let hi = (blk & 2u) != 0u;
    let d = blk_scale(b.v[0], hi);
    if (FMT == Q8_0) {
        return d * (((dot(i8x4(blk_q(b.v[0], b.v[1], hi)), x0) + dot(i8x4(blk_q(b.v[1], b.v[2], hi)), x1)) +
                     (dot(i8x4(blk_q(b.v[2], b.v[3], hi)), x2) + dot(i8x4(blk_q(b.v[3], b.v[4], hi)), x3))) +
                    ((dot(i8x4(blk_q(b.v[4], b.v[5], hi)), x4) + dot(i8x4(blk_q(b.v[5], b.v[6], hi)), x5)) +
                     (dot(i8x4(blk_q(b.v[6], b.v[7], hi)), x6) + dot(i8x4(blk_q(b.v[7], b.v[8], hi)), x7))));
    }
    let q0 = blk_q(b.v[0], b.v[1], hi);
    let q1 = blk_q(b.v[1], b.v[2], hi);
    let q2 = blk_q(b.v[2], b.v[3], hi);
    let q3 = blk_q(b.v[3], b.v[4], hi);
    let e = vec4<f32>(8.0);
    return d * (((dot(nib4(q0, 0u) - e, x0) + dot(nib4(q1, 0u) - e, x1)) +
                 (dot(nib4(q2, 0u) - e, x2) + dot(nib4(q3, 0u) - e, x3))) +
                ((dot(nib4(q0, 4u) - e, x4) + dot(nib4(q1, 4u) - e, x5)) +
                 (dot(nib4(q2, 4u) - e, x6) + dot(nib4(q3, 4u) - e, x7))));
}

// ---- blocks: staged x ----

// pro(x) for the whole row staged once a workgroup where the prelude's XS (vec4s: K / 4 + K / 32,
// or 1 for none) fits in workgroup memory (the op stages SwiGLU's, or every prologue's): SwiGLU's
// exp of each column once per workgroup rather than once per row (Llama-3.2-1B's down projection:
// 16.8M a token otherwise), and x read from workgroup memory instead of the L1 cache, where a
// subgroup's lanes (one block each, 128 bytes of x apart) touch 32 lines a load. A block's 8 vec4s
// sit 9 apart (one vec4 of padding a block), so the lanes' 16-byte reads spread over the banks.
var<workgroup> xg: array<vec4<f32>, XS>;

// pro(x) at vec4 c of the columns (c < K / 4); ss gets dot(x, x) for RMSNorm's scale.
fn pro_direct(c: u32, ss: ptr<function, f32>) -> vec4<f32> {
    let v = x[p.off_x + c];
    if (PRO == 1u) {
        *ss += dot(v, v);
        return v * gam[p.off_g + c];
    }
    if (PRO == 2u) { return silu4(v) * x[p.off_x + p.K / 4u + c]; }
    return v;
}

// pro(x) of vec4 c from its loaded x (v) and gamma or up (s, pro_second's): staging's arithmetic.
fn pro_second(c: u32) -> vec4<f32> {
    if (PRO == 1u) { return gam[p.off_g + c]; }
    if (PRO == 2u) { return x[p.off_x + p.K / 4u + c]; }
    return vec4<f32>(0.0);
}

fn pro_apply(v: vec4<f32>, s: vec4<f32>, ss: ptr<function, f32>) -> vec4<f32> {
    if (PRO == 1u) {
        *ss += dot(v, v);
        return v * s;
    }
    if (PRO == 2u) { return silu4(v) * s; }
    return v;
}

// Stages pro(x) of every column in xg (XS > 1), four vec4s an invocation a round with their loads
// issued before any is used: a round's loads wait for the L2 once (Llama-3.2-1B's down projection
// stages 2048 vec4s of gate and of up in 256 invocations: 8 rounds one load at a time before).
fn stage_x(lid: u32, ss: ptr<function, f32>) {
    let kv = p.K / 4u;
    var c = lid;
    for (; c + 3u * WG < kv; c += 4u * WG) {
        let c1 = c + WG;
        let c2 = c + 2u * WG;
        let c3 = c + 3u * WG;
        let v0 = x[p.off_x + c];
        let v1 = x[p.off_x + c1];
        let v2 = x[p.off_x + c2];
        let v3 = x[p.off_x + c3];
        let s0 = pro_second(c);
        let s1 = pro_second(c1);
        let s2 = pro_second(c2);
        let s3 = pro_second(c3);
        xg[c + (c >> 3u)] = pro_apply(v0, s0, ss);
        xg[c1 + (c1 >> 3u)] = pro_apply(v1, s1, ss);
        xg[c2 + (c2 >> 3u)] = pro_apply(v2, s2, ss);
        xg[c3 + (c3 >> 3u)] = pro_apply(v3, s3, ss);
    }
    for (; c < kv; c += WG) { xg[c + (c >> 3u)] = pro_direct(c, ss); }
}

// pro(x) at vec4 c: staged (its sum of squares counted by the staging lanes) or direct.
fn pro_x(c: u32, ss: ptr<function, f32>) -> vec4<f32> {
    if (XS > 1u) { return xg[c + (c >> 3u)]; }
    return pro_direct(c, ss);
}

fn q8_term(q: u32, d: f32, c: u32, ss: ptr<function, f32>) -> f32 { return dot(i8x4(q) * d, pro_x(c, ss)); }

// Quant word q holds elements 4i .. 4i + 3 (low nibbles, vec4 c) and 16 + 4i .. (high, c + 4).
fn q4_term(q: u32, d: f32, c: u32, ss: ptr<function, f32>) -> f32 {
    return dot((nib4(q, 0u) - 8.0) * d, pro_x(c, ss)) + dot((nib4(q, 4u) - 8.0) * d, pro_x(c + 4u, ss));
}

// The dot product of block u (its words b, at byte blk) with pro(x) of its 32 columns; the
// dequantised values are quant.c's (q * d, (nibble - 8) * d) in f32. Written out word by word so
// the words stay in registers.
fn blk_dot(b: BlockWords, blk: u32, u: u32, ss: ptr<function, f32>) -> f32 {
    let hi = (blk & 2u) != 0u;
    let d = unpack2x16float(select(b.v[0] & 0xffffu, b.v[0] >> 16u, hi)).x;
    let c = u * 8u;
    if (FMT == Q8_0) {
        return ((q8_term(blk_q(b.v[0], b.v[1], hi), d, c, ss) + q8_term(blk_q(b.v[1], b.v[2], hi), d, c + 1u, ss)) +
                (q8_term(blk_q(b.v[2], b.v[3], hi), d, c + 2u, ss) + q8_term(blk_q(b.v[3], b.v[4], hi), d, c + 3u, ss))) +
               ((q8_term(blk_q(b.v[4], b.v[5], hi), d, c + 4u, ss) + q8_term(blk_q(b.v[5], b.v[6], hi), d, c + 5u, ss)) +
                (q8_term(blk_q(b.v[6], b.v[7], hi), d, c + 6u, ss) + q8_term(blk_q(b.v[7], b.v[8], hi), d, c + 7u, ss)));
    }
    return (q4_term(blk_q(b.v[0], b.v[1], hi), d, c, ss) + q4_term(blk_q(b.v[1], b.v[2], hi), d, c + 1u, ss)) +
           (q4_term(blk_q(b.v[2], b.v[3], hi), d, c + 2u, ss) + q4_term(blk_q(b.v[3], b.v[4], hi), d, c + 3u, ss));
}

@compute @workgroup_size(WG)
fn blocks(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
          @builtin(num_workgroups) nwg: vec3<u32>) {
    let tpr = p.tpr;
    let lane = lid % tpr;
    let row = (wid.x + wid.y * nwg.x) * (WG / tpr) + lid / tpr;
    let live = row < p.N;
    let rb = p.w_off + row * p.row_bytes;
    let bsz = select(18u, 34u, FMT == Q8_0);
    var acc = 0.0;
    var ssq = 0.0; // the lane's share of x's sum of squares (its blocks', or its staged columns')
    // Up to four blocks a lane in flight (u, u + tpr, u + 2 tpr, u + 3 tpr): the loads of a step
    // issue together, so a lane with at most four blocks (every Qwen2.5-0.5B and Llama-3.2-1B
    // shape at the op's lanes a row) waits for memory once.
    let t = tpr;
    var u = lane;
    var w0: BlockWords;
    var w1: BlockWords;
    var w2: BlockWords;
    var w3: BlockWords;
    if (live && u < p.units) { w0 = blk_load(rb + u * bsz); }
    if (live && u + t < p.units) { w1 = blk_load(rb + (u + t) * bsz); }
    if (live && u + 2u * t < p.units) { w2 = blk_load(rb + (u + 2u * t) * bsz); }
    if (live && u + 3u * t < p.units) { w3 = blk_load(rb + (u + 3u * t) * bsz); }
    if (XS > 1u) { // the staging, after the first step's loads
        stage_x(lid, &ssq);
        workgroupBarrier();
    }
    if (live) {
        loop {
            if (u >= p.units) { break; }
            acc += blk_dot(w0, rb + u * bsz, u, &ssq);
            if (u + t < p.units) { acc += blk_dot(w1, rb + (u + t) * bsz, u + t, &ssq); }
            if (u + 2u * t < p.units) { acc += blk_dot(w2, rb + (u + 2u * t) * bsz, u + 2u * t, &ssq); }
            if (u + 3u * t < p.units) { acc += blk_dot(w3, rb + (u + 3u * t) * bsz, u + 3u * t, &ssq); }
            u += 4u * t;
            if (u < p.units) { w0 = blk_load(rb + u * bsz); }
            if (u + t < p.units) { w1 = blk_load(rb + (u + t) * bsz); }
            if (u + 2u * t < p.units) { w2 = blk_load(rb + (u + 2u * t) * bsz); }
            if (u + 3u * t < p.units) { w3 = blk_load(rb + (u + 3u * t) * bsz); }
        }
    }
    red[lid] = vec2<f32>(sg_sum(acc), sg_sum(ssq));
    workgroupBarrier();
    if (live && lane == 0u) {
        var t = vec2<f32>(0.0);
        for (var k = 0u; k < tpr; k += SG) { t += red[lid + k]; }
        var v = t.x;
        if (PRO == 1u) {
            var ss = t.y; // the row's lanes' sums of squares, or the whole workgroup's (staged)
            if (XS > 1u) {
                ss = 0.0;
                for (var k = 0u; k < WG; k += SG) { ss += red[k].y; }
            }
            v = v * inverseSqrt(ss / f32(p.K) + p.eps);
        }
        if ((p.flags & 1u) != 0u) { v += ldBias(p.off_b + row); }
        if ((p.flags & 2u) != 0u) { v += res[p.off_r + row]; }
        out[p.off_o + row] = v;
    }
}

// ---- rows: RB rows a lane group, x staged (Q8_0 and Q4_0) ----
// The entry `rows` (WGT_QLINEAR_ROWS, src/ops/qlinear.c) reads the blocks as `blocks` does (a lane
// per whole block, its aligned words), but a group of p.tpr lanes serves RB consecutive rows (the
// prelude's `const RB: u32`, 1 to 4): each lane reads its block's 8 vec4s of staged pro(x) once from
// workgroup memory for RB rows' blocks (`blocks` reads them once a row: 128 bytes of workgroup
// memory per 34-byte Q8_0 block, the H200's bottleneck there), and a workgroup stages x for RB
// times as many rows. Loads: the RB rows' blocks at u, and those at u + p.tpr issued before u's
// are used. Rows past N read row N - 1 (in bounds) and write nothing. Needs the staging (XS > 1).
var<workgroup> red4: array<vec4<f32>, WG>;

fn blk_load_rows(rows: vec4<u32>, o: u32, w0: ptr<function, BlockWords>, w1: ptr<function, BlockWords>,
                 w2: ptr<function, BlockWords>, w3: ptr<function, BlockWords>) {
    *w0 = blk_load(rows.x + o);
    if (RB > 1u) { *w1 = blk_load(rows.y + o); }
    if (RB > 2u) { *w2 = blk_load(rows.z + o); }
    if (RB > 3u) { *w3 = blk_load(rows.w + o); }
}

// The byte offsets of row group g's RB rows (rows past N: row N - 1's). With the SwiGLU epilogue
// (GLU 1, RB 2 or 4: H = N / 2 outputs, the weight's gate rows then its up rows), group g holds
// gate rows g RB / 2 .. and the up rows H after them: (j, H + j) for RB 2, (j, j + 1, H + j,
// H + j + 1) for RB 4 (gate rows past H: row H - 1's, up rows: N - 1's).
fn group_rows(g: u32) -> vec4<u32> {
    var r = vec4<u32>(g * RB) + vec4<u32>(0u, 1u, 2u, 3u);
    var last = vec4<u32>(p.N - 1u);
    if (GLU == 1u) {
        let h = p.N / 2u;
        let j = g * (RB / 2u);
        r = select(vec4<u32>(j, h + j, j, h + j), vec4<u32>(j, j + 1u, h + j, h + j + 1u), RB == 4u);
        last = select(vec4<u32>(h - 1u, p.N - 1u, h - 1u, p.N - 1u), vec4<u32>(h - 1u, h - 1u, p.N - 1u, p.N - 1u),
                      RB == 4u);
    }
    return vec4<u32>(p.w_off) + min(r, last) * p.row_bytes;
}

fn silu1(v: f32) -> f32 { return v / (1.0 + exp(-v)); }

// Row `row`'s value from its sum t: scaled, its bias and residual added.
fn row_value(t: f32, scale: f32, row: u32) -> f32 {
    var v = t * scale;
    if ((p.flags & 1u) != 0u) { v += ldBias(p.off_b + row); }
    if ((p.flags & 2u) != 0u) { v += res[p.off_r + row]; }
    return v;
}

// Row groups of RB rows, WG / p.tpr a workgroup step; a workgroup takes steps wid, wid + the grid's
// workgroups, ... (the host may dispatch fewer workgroups than steps, so a workgroup stages x once for
// several steps). Each step's first blocks load before the previous step's sums are reduced.
@compute @workgroup_size(WG)
fn rows(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let tpr = p.tpr;
    let lane = lid % tpr;
    let gpw = WG / tpr;
    let outs = select(p.N, p.N / 2u, GLU == 1u); // values written: rows, or SwiGLU's gate/up pairs
    let opg = select(RB, RB / 2u, GLU == 1u);    // of them a group
    let ngr = (outs + opg - 1u) / opg;
    let nwgt = nwg.x * nwg.y;
    let bsz = select(18u, 34u, FMT == Q8_0);
    var it = wid.x + wid.y * nwg.x; // the workgroup's step (uniform)
    var g = it * gpw + lid / tpr;   // the lane group's row group
    var rw = group_rows(g);
    var ssq = 0.0; // the lane's share of x's sum of squares, over the columns it stages
    var u = lane;
    var w0: BlockWords;
    var w1: BlockWords;
    var w2: BlockWords;
    var w3: BlockWords;
    if (u < p.units) { blk_load_rows(rw, u * bsz, &w0, &w1, &w2, &w3); }
    stage_x(lid, &ssq); // after the loads
    red[lid] = vec2<f32>(0.0, sg_sum(ssq));
    workgroupBarrier();
    var scale = 1.0;
    if (PRO == 1u) { // the whole workgroup staged x: its sums of squares are all of x's
        var ss = 0.0;
        for (var k = 0u; k < WG; k += SG) { ss += red[k].y; }
        scale = inverseSqrt(ss / f32(p.K) + p.eps);
    }
    loop {
        if (it * gpw >= ngr) { break; }
        let more = (it + nwgt) * gpw < ngr;
        let gn = g + nwgt * gpw;
        let rows_n = group_rows(gn);
        var acc = vec4<f32>(0.0); // the RB rows' shares of this lane
        loop {
            if (u >= p.units) { break; }
            let b0 = w0;
            let b1 = w1;
            let b2 = w2;
            let b3 = w3;
            let o = u * bsz;
            let un = u + tpr;
            // the next blocks' loads (this group's, or the next step's first) before this one's arithmetic
            if (un < p.units) { blk_load_rows(rw, un * bsz, &w0, &w1, &w2, &w3); }
            else if (more) { blk_load_rows(rows_n, lane * bsz, &w0, &w1, &w2, &w3); }
            let xi = u * 9u;
            let x0 = xg[xi];
            let x1 = xg[xi + 1u];
            let x2 = xg[xi + 2u];
            let x3 = xg[xi + 3u];
            let x4 = xg[xi + 4u];
            let x5 = xg[xi + 5u];
            let x6 = xg[xi + 6u];
            let x7 = xg[xi + 7u];
            acc.x += blk_dot_x(b0, rw.x + o, x0, x1, x2, x3, x4, x5, x6, x7);
            if (RB > 1u) { acc.y += blk_dot_x(b1, rw.y + o, x0, x1, x2, x3, x4, x5, x6, x7); }
            if (RB > 2u) { acc.z += blk_dot_x(b2, rw.z + o, x0, x1, x2, x3, x4, x5, x6, x7); }
            if (RB > 3u) { acc.w += blk_dot_x(b3, rw.w + o, x0, x1, x2, x3, x4, x5, x6, x7); }
            u = un;
        }
        var t = vec4<f32>(sg_sum(acc.x), 0.0, 0.0, 0.0);
        if (RB > 1u) { t.y = sg_sum(acc.y); }
        if (RB > 2u) { t.z = sg_sum(acc.z); }
        if (RB > 3u) { t.w = sg_sum(acc.w); }
        if (tpr != SG) { // a group spans several subgroups (or none): their sums through red4
            workgroupBarrier(); // the previous step's reads of red4 are done
            red4[lid] = t;
            workgroupBarrier();
            if (lane == 0u) {
                t = vec4<f32>(0.0);
                for (var k = 0u; k < tpr; k += SG) { t += red4[lid + k]; }
            }
        }
        if (lane == 0u && GLU == 1u) { // silu(gate) * up (the op allows no residual here)
            for (var r = 0u; r < RB / 2u; r++) {
                let j = g * (RB / 2u) + r;
                if (j < outs) {
                    out[p.off_o + j] = silu1(row_value(t[r], scale, j)) * row_value(t[r + RB / 2u], scale, outs + j);
                }
            }
        } else if (lane == 0u) {
            for (var r = 0u; r < RB; r++) {
                let row = g * RB + r;
                if (row < p.N) { out[p.off_o + row] = row_value(t[r], scale, row); }
            }
        }
        it += nwgt;
        g = gn;
        rw = rows_n;
        u = lane;
    }
}
