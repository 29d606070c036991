// Quantized linear layers: out[t, r] = sum_k x[t, k] * W[r, k] + bias[r], with W kept in its GGUF
// block format (Q8_0, Q4_0, Q4_K, Q6_K) and dequantised in registers, never stored as f32.
// The prelude (src/ops/qlinear.c) supplies:
//   lib_rowsum.wgsl's section (op_wgsl_row_subgroups: `enable subgroups;` when used, HAS_SG, rsum,
//   rsize, row_share, row_total), `const FMT: u32` (the wgt_ftype number) and `const WG: u32`
//   (invocations per workgroup: 256, or 128 where the device allows no more).
// Two entry points (sizes for WG 256; half the rows, or tokens, per workgroup at 128):
//   gemv:  decode (few tokens). 32 invocations per weight row, 8 rows per workgroup; each walks
//          the row's 8-element pieces and keeps up to 4 token sums; one pass over the weights per
//          4 tokens. The 4 sums are reduced as one vec4 by lib_rowsum.wgsl's row sum.
//   tiled: prefill. A tile of 64 rows x 32 tokens per workgroup (32 x 16 at 128); each 32-column
//          step dequantises the weight piece once into workgroup memory and multiplies it with
//          the tile's tokens.
// GGML blocks are not 4-byte aligned (Q8_0 34 bytes, Q4_0 18, Q6_K 210): bytes are read out of the
// u32 words of the binding (rd32 at any byte address).

struct Params {
    rows: u32,       // weight rows in this dispatch (a chunk of the whole)
    cols: u32,       // columns (elements per row), a multiple of 32
    tokens: u32,     // tokens in this dispatch
    row_bytes: u32,  // bytes per weight row
    w_off: u32,      // byte offset of row 0 of the chunk within the w binding
    x_off: u32,      // vec4 index of x[token 0, 0] within the x binding
    out_off: u32,    // element index of out[token 0, row 0] within the out binding
    bias_off: u32,   // element index of bias[row 0] within the bias binding
    has_bias: u32,
    out_stride: u32, // elements between tokens in out (all rows of the layer)
    units: u32,      // 32-element units per row: cols / 32
    tpr: u32,        // GV_TPR, for lib_rowsum.wgsl
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

// ---- decoders ----
const Q4_0: u32 = 2u;
const Q8_0: u32 = 8u;
const Q4_K: u32 = 12u;
const Q6_K: u32 = 14u;

// The 4 bytes at byte address b (any alignment), little-endian. Branch-free, so the loads of a
// piece issue together. Q4_K's reads are all 4-byte aligned (144-byte super-blocks, fields at
// multiples of 4; the op guarantees row starts at multiples of 4) and read one word.
fn rd32(b: u32) -> u32 {
    if (FMT == Q4_K) { return w[b >> 2u]; }
    let i = b >> 2u;
    let s = (b & 3u) * 8u;
    let lo = w[i];
    let hi = w[i + 1u];
    return select((lo >> s) | (hi << (32u - s)), lo, s == 0u);
}

fn rd_f16(b: u32) -> f32 { return unpack2x16float(rd32(b) & 0xffffu).x; }

fn byte_of(v: u32, k: u32) -> u32 { return (v >> (k * 8u)) & 0xffu; }

// Four signed bytes of a word as f32.
fn i8x4(v: u32) -> vec4<f32> {
    return vec4<f32>((vec4<i32>(bitcast<i32>(v)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

// Nibbles at bit `s` of each byte of a word, as f32 (0..15).
fn nib4(v: u32, s: u32) -> vec4<f32> {
    return vec4<f32>((vec4<u32>(v) >> vec4<u32>(s, s + 8u, s + 16u, s + 24u)) & vec4<u32>(0xfu));
}

// Two bits at bit `s` of each byte of a word (0..3).
fn bits2x4(v: u32, s: u32) -> vec4<u32> {
    return (vec4<u32>(v) >> vec4<u32>(s, s + 8u, s + 16u, s + 24u)) & vec4<u32>(3u);
}

struct Piece { a: vec4<f32>, b: vec4<f32> };

// Elements 32*u + 8*q .. +8 of the row whose bytes start at byte rb (q in 0..3), exactly as
// src/quant/quant.c dequantises them (the same f32 operations in the same order).
fn piece(rb: u32, u: u32, q: u32) -> Piece {
    if (FMT == Q8_0) { // {f16 d; i8 qs[32]}
        let blk = rb + u * 34u;
        let d = rd_f16(blk);
        return Piece(i8x4(rd32(blk + 2u + 8u * q)) * d, i8x4(rd32(blk + 6u + 8u * q)) * d);
    }
    if (FMT == Q4_0) { // {f16 d; u8 qs[16]}: low nibbles are elements 0..15, high ones 16..31
        let blk = rb + u * 18u;
        let d = rd_f16(blk);
        let at = blk + 2u + 8u * (q & 1u);
        let s = (q >> 1u) * 4u;
        return Piece((nib4(rd32(at), s) - 8.0) * d, (nib4(rd32(at + 4u), s) - 8.0) * d);
    }
    if (FMT == Q4_K) { // {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}, sub-block j of 8
        let sb = rb + (u >> 3u) * 144u;
        let j = u & 7u;
        let dd = unpack2x16float(rd32(sb)); // d, dmin
        let d = dd.x;
        let dmin = dd.y;
        let s0 = rd32(sb + 4u);
        let s1 = rd32(sb + 8u);
        let s2 = rd32(sb + 12u);
        var sc: u32;
        var m: u32;
        if (j < 4u) {
            sc = byte_of(s0, j) & 63u;
            m = byte_of(s1, j) & 63u;
        } else {
            let hi = byte_of(s2, j - 4u);
            sc = (hi & 0xfu) | ((byte_of(s0, j - 4u) >> 6u) << 4u);
            m = (hi >> 4u) | ((byte_of(s1, j - 4u) >> 6u) << 4u);
        }
        let d0 = d * f32(sc);
        let n0 = dmin * f32(m);
        let at = sb + 16u + 32u * (j >> 1u) + 8u * q;
        let s = (j & 1u) * 4u;
        return Piece(d0 * nib4(rd32(at), s) - n0, d0 * nib4(rd32(at + 4u), s) - n0);
    }
    // Q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}; sub-block j = 4 * half + k
    let sb = rb + (u >> 3u) * 210u;
    let j = u & 7u;
    let half = j >> 2u;
    let k = j & 3u;
    let d = rd_f16(sb + 208u);
    let scb = byte_of(rd32(sb + 192u + 8u * half + (q >> 1u) + 2u * k), 0u);
    let dl = d * f32((bitcast<i32>(scb) << 24u) >> 24u);
    let ql = sb + 64u * half + 32u * (k & 1u) + 8u * q;
    let qh = sb + 128u + 32u * half + 8u * q;
    let ls = (k >> 1u) * 4u;
    let lo0 = (vec4<u32>(rd32(ql)) >> vec4<u32>(ls, ls + 8u, ls + 16u, ls + 24u)) & vec4<u32>(0xfu);
    let lo1 = (vec4<u32>(rd32(ql + 4u)) >> vec4<u32>(ls, ls + 8u, ls + 16u, ls + 24u)) & vec4<u32>(0xfu);
    let v0 = vec4<i32>(lo0 | (bits2x4(rd32(qh), 2u * k) << vec4<u32>(4u))) - vec4<i32>(32);
    let v1 = vec4<i32>(lo1 | (bits2x4(rd32(qh + 4u), 2u * k) << vec4<u32>(4u))) - vec4<i32>(32);
    return Piece(dl * vec4<f32>(v0), dl * vec4<f32>(v1));
}

// ---- gemv -----------------------------------------------------------------------------------

const GV_WG: u32 = WG;
const GV_TPR: u32 = 32u;           // invocations per row
const GV_RPW: u32 = GV_WG / GV_TPR; // rows per workgroup (8 at 256)
const GV_NT: u32 = 4u;             // tokens per pass

// lib_rowsum.wgsl sums a lane's GV_NT token sums over the row's GV_TPR lanes (p.tpr = GV_TPR)
alias ROW = vec4<f32>; // GV_NT sums
fn row_rsum(v: ROW) -> ROW { return ROW(rsum(v.x), rsum(v.y), rsum(v.z), rsum(v.w)); }
var<workgroup> red: array<ROW, GV_WG>;

// acc[t] += piece . x[token t][the piece's 8 columns], for the nt (<= 4) tokens; xi indexes token 0.
fn acc_piece(acc: ptr<function, vec4<f32>>, pc: Piece, xi: u32, xrow: u32, nt: u32) {
    (*acc).x += dot(pc.a, x[xi]) + dot(pc.b, x[xi + 1u]);
    if (nt > 1u) { (*acc).y += dot(pc.a, x[xi + xrow]) + dot(pc.b, x[xi + xrow + 1u]); }
    if (nt > 2u) { (*acc).z += dot(pc.a, x[xi + 2u * xrow]) + dot(pc.b, x[xi + 2u * xrow + 1u]); }
    if (nt > 3u) { (*acc).w += dot(pc.a, x[xi + 3u * xrow]) + dot(pc.b, x[xi + 3u * xrow + 1u]); }
}

@compute @workgroup_size(GV_WG)
fn gemv(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let group = wid.x + wid.y * nwg.x;
    let lane = lid % GV_TPR;
    let rl = lid / GV_TPR;
    let row = group * GV_RPW + rl;
    let t0 = wid.z * GV_NT;
    let nt = min(GV_NT, p.tokens - t0);
    let xrow = p.cols / 4u; // vec4s per token
    var acc = vec4<f32>(0.0);
    if (row < p.rows) {
        let rb = p.w_off + row * p.row_bytes;
        let xb = p.x_off + t0 * xrow;
        // Item i of a row is its 8-element piece i (unit i / 4, piece i % 4): the 32 invocations
        // of a row read consecutive pieces, so each load instruction of a subgroup touches one
        // stretch of bytes. Four items per step, their loads issued before any is used: enough
        // bytes in flight to stream the weights.
        let items = p.units * 4u;
        var it = lane;
        for (; it + 3u * GV_TPR < items; it += 4u * GV_TPR) {
            let i1 = it + GV_TPR;
            let i2 = it + 2u * GV_TPR;
            let i3 = it + 3u * GV_TPR;
            let p0 = piece(rb, it >> 2u, it & 3u);
            let p1 = piece(rb, i1 >> 2u, i1 & 3u);
            let p2 = piece(rb, i2 >> 2u, i2 & 3u);
            let p3 = piece(rb, i3 >> 2u, i3 & 3u);
            acc_piece(&acc, p0, xb + it * 2u, xrow, nt);
            acc_piece(&acc, p1, xb + i1 * 2u, xrow, nt);
            acc_piece(&acc, p2, xb + i2 * 2u, xrow, nt);
            acc_piece(&acc, p3, xb + i3 * 2u, xrow, nt);
        }
        for (; it < items; it += GV_TPR) { acc_piece(&acc, piece(rb, it >> 2u, it & 3u), xb + it * 2u, xrow, nt); }
    }
    let sg = row_share(lid, lane, acc);
    if (row < p.rows && lane == 0u) {
        let t = row_total(lid, sg);
        for (var j = 0u; j < nt; j++) {
            var v = t[j];
            if (p.has_bias != 0u) { v += bias[p.bias_off + row]; }
            out[p.out_off + (t0 + j) * p.out_stride + row] = v;
        }
    }
}

// ---- tiled ----------------------------------------------------------------------------------

// Every invocation loads one 8-element weight piece (4 per row) and one vec4 of x (8 per token):
// the tile's sizes follow WG. Each computes 4 rows (tx + TL_RX i) of TL_T / TL_TY tokens
// (ty + TL_TY j): 4 x 2 at 256, 4 x 1 at 128.
const TL_R: u32 = WG / 4u;     // rows per tile (64 at 256)
const TL_T: u32 = WG / 8u;     // tokens per tile (32 at 256)
const TL_LD: u32 = 33u;        // padded row length in workgroup memory (no bank conflicts)
const TL_RX: u32 = TL_R / 4u;  // invocations across rows (16 at 256)
const TL_TY: u32 = WG / TL_RX; // invocations across tokens (16 at 256, as many as 128 has)

var<workgroup> ws: array<f32, TL_R * TL_LD>;
var<workgroup> xs: array<f32, TL_T * TL_LD>;

@compute @workgroup_size(WG)
fn tiled(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
         @builtin(num_workgroups) nwg: vec3<u32>) {
    let r0 = (wid.x + wid.y * nwg.x) * TL_R;
    let t0 = wid.z * TL_T;
    let xrow = p.cols / 4u;
    // loading roles: weight row lid / 4, piece lid % 4; token lid / 8, vec4 lid % 8
    let lr = lid >> 2u;
    let lq = lid & 3u;
    let lt = lid >> 3u;
    let lv = lid & 7u;
    let wrow = r0 + lr;
    let rb = p.w_off + wrow * p.row_bytes;
    let xt = t0 + lt;
    // computing roles: rows tx + TL_RX i (i < 4), tokens ty + TL_TY j (j < TL_T / TL_TY)
    let tx = lid % TL_RX;
    let ty = lid / TL_RX;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    for (var u = 0u; u < p.units; u++) {
        var pc = Piece(vec4<f32>(0.0), vec4<f32>(0.0));
        if (wrow < p.rows) { pc = piece(rb, u, lq); }
        let wo = lr * TL_LD + lq * 8u;
        ws[wo] = pc.a.x; ws[wo + 1u] = pc.a.y; ws[wo + 2u] = pc.a.z; ws[wo + 3u] = pc.a.w;
        ws[wo + 4u] = pc.b.x; ws[wo + 5u] = pc.b.y; ws[wo + 6u] = pc.b.z; ws[wo + 7u] = pc.b.w;
        var xv = vec4<f32>(0.0);
        if (xt < p.tokens) { xv = x[p.x_off + xt * xrow + u * 8u + lv]; }
        let xo = lt * TL_LD + lv * 4u;
        xs[xo] = xv.x; xs[xo + 1u] = xv.y; xs[xo + 2u] = xv.z; xs[xo + 3u] = xv.w;
        workgroupBarrier();
        for (var k = 0u; k < 32u; k++) {
            let w4 = vec4<f32>(ws[tx * TL_LD + k], ws[(tx + TL_RX) * TL_LD + k],
                               ws[(tx + 2u * TL_RX) * TL_LD + k], ws[(tx + 3u * TL_RX) * TL_LD + k]);
            acc0 += w4 * xs[ty * TL_LD + k];
            if (TL_T > TL_TY) { acc1 += w4 * xs[(ty + TL_TY) * TL_LD + k]; }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
        let r = r0 + tx + TL_RX * i;
        if (r >= p.rows) { continue; }
        var b = 0.0;
        if (p.has_bias != 0u) { b = bias[p.bias_off + r]; }
        if (t0 + ty < p.tokens) { out[p.out_off + (t0 + ty) * p.out_stride + r] = acc0[i] + b; }
        if (TL_T > TL_TY && t0 + ty + TL_TY < p.tokens) {
            out[p.out_off + (t0 + ty + TL_TY) * p.out_stride + r] = acc1[i] + b;
        }
    }
}
