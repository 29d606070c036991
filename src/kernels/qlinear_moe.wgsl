// A mixture of experts' chosen experts, reading only their weights (quantized blocks, or f32, f16,
// bf16 rows), in place (src/ops/qlinear_moe.c). The experts are stacked as the model loader lays them out:
//   gu   [2 E F rows, D cols]: every expert's gate rows (expert e: rows e F .. e F + F - 1), then
//        every expert's up rows (E F + e F ..);
//   down [D rows, E F cols]: expert e's columns e F .. e F + F - 1 of each row.
// The router's choice stays on the device.
// One token (decode): ids [K] (i32 expert numbers of the top k, any order), wts [K] their weights.
//   gate_up: act[k F + j] = silu(gate_e . x) * (up_e . x), e = ids[k] (2 rows of D per output);
//   down:    y[d] = sum_k wts[k] * sum_j down[d, e F + j] * act[k F + j] (K F columns per row).
//   Both read a row as the `gemv` entry of qlinear.wgsl does: 32 invocations a row, WG / 32 rows a
//   workgroup, consecutive 8-element pieces across a row's invocations, four pieces in flight.
// Many tokens (prefill), grouped by expert: the L K (token, slot) pairs of the top k sorted by
// expert, `ids` holding off [E + 1] (expert e's pairs are sorted positions off[e] .. off[e + 1])
// then order [L K] (the pair, token * K + slot, at each sorted position); wts [L K] per pair.
//   gate_up_grouped: act[q F + j] for every pair q of expert e (x row q / K);
//   down_grouped:    out[q D + d] = wts[q] * sum_j down[d, e F + j] * act[q F + j] (summed over
//                    the k slots of a token afterwards).
//   Workgroup (x, e, z): a tile of weight rows (x) of expert e times its pairs z TL_T ..; each
//   32-column step dequantises the tile's weight pieces once into workgroup memory, as the
//   `tiled` entry of qlinear.wgsl; a tile past the expert's pairs returns at once. gate_up's tile
//   holds TL_R / 2 gate rows and the same outputs' up rows.
// The prelude supplies lib_rowsum.wgsl's section (rsum, row_share, row_total; reads p.tpr),
// `const FMT: u32` (the wgt_ftype number: a block format, or 0 f32, 1 f16, 30 bf16), `const WG: u32`
// and qlinear.wgsl's "decoders" section (rd32 .. piece, which read the `w` binding declared here).
// F is a multiple of the format's block (32, or 256 for the K formats), so an expert's columns
// start at a block of each row.

struct Params {
    n_out: u32,     // gate_up: K F outputs; down: D rows
    units: u32,     // 32-element units a weight row holds per expert's share: D / 32 (gate_up), F / 32 (down)
    F: u32,         // each expert's intermediate size
    E: u32,         // experts
    K: u32,         // chosen experts
    row_bytes: u32, // bytes per weight row
    w_off: u32,     // byte offset of row 0 within the w binding
    x_off: u32,     // vec4 index of x[0] (gate_up) / act[0] (down)
    ids_off: u32,   // element index of ids[0] (grouped: of off[0])
    wts_off: u32,   // element index of wts[0]
    out_off: u32,   // element index of out[0]
    tpr: u32,       // invocations per row (32), for lib_rowsum.wgsl
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> ids: array<u32>;
@group(0) @binding(4) var<storage, read> wts: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

const TPR: u32 = 32u;      // invocations per row
const RPW: u32 = WG / TPR; // rows (outputs) per workgroup

alias ROW = vec2<f32>; // gate_up: (gate, up) sums; down: (sum, unused)
fn row_rsum(v: ROW) -> ROW { return ROW(rsum(v.x), rsum(v.y)); }
var<workgroup> red: array<ROW, WG>;

// Elements 32 u + 8 q .. + 8 of the row at byte rb: the float formats read as they are (f32 words,
// f16 pairs, bf16 as the high halves of f32), the block formats through qlinear.wgsl's piece.
const WF32: u32 = 0u;
const WF16: u32 = 1u;
const WBF16: u32 = 30u;
fn bf16x2(v: u32) -> vec2<f32> { return vec2<f32>(bitcast<f32>(v << 16u), bitcast<f32>(v & 0xffff0000u)); }
fn wpiece(rb: u32, u: u32, q: u32) -> Piece {
    if (FMT == WF32) { // rows of f32 start at whole words
        let i = (rb >> 2u) + u * 32u + q * 8u;
        return Piece(bitcast<vec4<f32>>(vec4<u32>(w[i], w[i + 1u], w[i + 2u], w[i + 3u])),
                     bitcast<vec4<f32>>(vec4<u32>(w[i + 4u], w[i + 5u], w[i + 6u], w[i + 7u])));
    }
    if (FMT == WF16 || FMT == WBF16) {
        let b = rb + (u * 32u + q * 8u) * 2u;
        let a0 = rd32(b);
        let a1 = rd32(b + 4u);
        let a2 = rd32(b + 8u);
        let a3 = rd32(b + 12u);
        if (FMT == WF16) {
            return Piece(vec4<f32>(unpack2x16float(a0), unpack2x16float(a1)),
                         vec4<f32>(unpack2x16float(a2), unpack2x16float(a3)));
        }
        return Piece(vec4<f32>(bf16x2(a0), bf16x2(a1)), vec4<f32>(bf16x2(a2), bf16x2(a3)));
    }
    return piece(rb, u, q);
}

// The expert chosen in slot k (clamped: a bad id reads a real expert, never past the weights).
fn expert(k: u32) -> u32 { return min(ids[p.ids_off + k], p.E - 1u); }

// Piece it of the row at byte rb from unit u0 (a row's pieces go to its invocations in turn), and
// a piece's dot with x's from vec4 xb.
fn piece_of(rb: u32, u0: u32, it: u32) -> Piece { return wpiece(rb, u0 + (it >> 2u), it & 3u); }
fn dot_piece(pc: Piece, xb: u32, it: u32) -> f32 {
    let xi = xb + it * 2u;
    return dot(pc.a, x[xi]) + dot(pc.b, x[xi + 1u]);
}

@compute @workgroup_size(WG)
fn gate_up(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) nwg: vec3<u32>) {
    let lane = lid % TPR;
    let o = (wid.x + wid.y * nwg.x) * RPW + lid / TPR;
    var acc = ROW(0.0);
    if (o < p.n_out) {
        let k = o / p.F;
        let e = expert(k);
        let j = o - k * p.F;
        let rg = p.w_off + (e * p.F + j) * p.row_bytes;
        let ru = rg + p.E * p.F * p.row_bytes;
        // two pieces of each row per step, their loads issued before either is used
        let items = p.units * 4u;
        var it = lane;
        for (; it + TPR < items; it += 2u * TPR) {
            let i1 = it + TPR;
            let g0 = piece_of(rg, 0u, it);
            let u0 = piece_of(ru, 0u, it);
            let g1 = piece_of(rg, 0u, i1);
            let u1 = piece_of(ru, 0u, i1);
            acc += ROW(dot_piece(g0, p.x_off, it), dot_piece(u0, p.x_off, it));
            acc += ROW(dot_piece(g1, p.x_off, i1), dot_piece(u1, p.x_off, i1));
        }
        for (; it < items; it += TPR) {
            acc += ROW(dot_piece(piece_of(rg, 0u, it), p.x_off, it),
                       dot_piece(piece_of(ru, 0u, it), p.x_off, it));
        }
    }
    let sg = row_share(lid, lane, acc);
    if (o < p.n_out && lane == 0u) {
        let t = row_total(lid, sg);
        out[p.out_off + o] = t.x / (1.0 + exp(-t.x)) * t.y;
    }
}

@compute @workgroup_size(WG)
fn down(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let lane = lid % TPR;
    let d = (wid.x + wid.y * nwg.x) * RPW + lid / TPR;
    var acc = ROW(0.0);
    if (d < p.n_out) {
        let rb = p.w_off + d * p.row_bytes;
        let per = p.units * 4u; // pieces of one expert's columns
        for (var k = 0u; k < p.K; k++) {
            let u0 = expert(k) * p.units;
            let xb = p.x_off + k * (p.F / 4u);
            var s = 0.0;
            var it = lane;
            for (; it + 3u * TPR < per; it += 4u * TPR) {
                let i1 = it + TPR;
                let i2 = it + 2u * TPR;
                let i3 = it + 3u * TPR;
                let p0 = piece_of(rb, u0, it);
                let p1 = piece_of(rb, u0, i1);
                let p2 = piece_of(rb, u0, i2);
                let p3 = piece_of(rb, u0, i3);
                s += dot_piece(p0, xb, it) + dot_piece(p1, xb, i1) + dot_piece(p2, xb, i2) + dot_piece(p3, xb, i3);
            }
            for (; it < per; it += TPR) { s += dot_piece(piece_of(rb, u0, it), xb, it); }
            acc.x += wts[p.wts_off + k] * s;
        }
    }
    let sg = row_share(lid, lane, acc);
    if (d < p.n_out && lane == 0u) {
        out[p.out_off + d] = row_total(lid, sg).x;
    }
}

// ---- grouped (prefill) ----

const TL_R: u32 = WG / 4u;     // weight rows per tile (64 at 256)
const TL_T: u32 = WG / 8u;     // pairs per tile (32 at 256)
const TL_LD: u32 = 33u;        // padded row length in workgroup memory
const TL_RX: u32 = TL_R / 4u;  // invocations across rows (16 at 256)
const TL_TY: u32 = WG / TL_RX; // invocations across pairs

var<workgroup> ws: array<f32, TL_R * TL_LD>;
var<workgroup> xs: array<f32, TL_T * TL_LD>;
var<workgroup> span: vec2<u32>; // the tile's first sorted position, its pair count

// The tile's pairs of expert e: sorted positions off[e] + z TL_T .., at most TL_T of them.
fn tile_span(lid: u32, e: u32, z: u32) -> vec2<u32> {
    if (lid == 0u) {
        let lo = ids[p.ids_off + e];
        let hi = ids[p.ids_off + e + 1u];
        let first = lo + z * TL_T;
        span = vec2<u32>(first, select(0u, min(hi - first, TL_T), hi > first));
    }
    return workgroupUniformLoad(&span);
}

fn pair_at(i: u32) -> u32 { return ids[p.ids_off + p.E + 1u + i]; }

// acc0 / acc1 (rows tx + TL_RX i of pairs ty, ty + TL_TY) over the units of rows starting at
// byte rb of the loading role (row lr, piece lq; valid rok), x vec4 xb of pair lt (valid xok).
fn tile_product(lid: u32, rb: u32, rok: bool, u0: u32, xb: u32, xok: bool, units: u32,
                acc0: ptr<function, vec4<f32>>, acc1: ptr<function, vec4<f32>>) {
    let lr = lid >> 2u;
    let lq = lid & 3u;
    let lt = lid >> 3u;
    let lv = lid & 7u;
    let tx = lid % TL_RX;
    let ty = lid / TL_RX;
    for (var u = 0u; u < units; u++) {
        var pc = Piece(vec4<f32>(0.0), vec4<f32>(0.0));
        if (rok) { pc = wpiece(rb, u0 + u, lq); }
        let wo = lr * TL_LD + lq * 8u;
        ws[wo] = pc.a.x; ws[wo + 1u] = pc.a.y; ws[wo + 2u] = pc.a.z; ws[wo + 3u] = pc.a.w;
        ws[wo + 4u] = pc.b.x; ws[wo + 5u] = pc.b.y; ws[wo + 6u] = pc.b.z; ws[wo + 7u] = pc.b.w;
        var xv = vec4<f32>(0.0);
        if (xok) { xv = x[xb + u * 8u + lv]; }
        let xo = lt * TL_LD + lv * 4u;
        xs[xo] = xv.x; xs[xo + 1u] = xv.y; xs[xo + 2u] = xv.z; xs[xo + 3u] = xv.w;
        workgroupBarrier();
        for (var k = 0u; k < 32u; k++) {
            let w4 = vec4<f32>(ws[tx * TL_LD + k], ws[(tx + TL_RX) * TL_LD + k],
                               ws[(tx + 2u * TL_RX) * TL_LD + k], ws[(tx + 3u * TL_RX) * TL_LD + k]);
            *acc0 += w4 * xs[ty * TL_LD + k];
            if (TL_T > TL_TY) { *acc1 += w4 * xs[(ty + TL_TY) * TL_LD + k]; }
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(WG)
fn gate_up_grouped(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let e = wid.y;
    let sp = tile_span(lid, e, wid.z);
    if (sp.y == 0u) { return; }
    let half = TL_R / 2u;
    let j0 = wid.x * half;
    // loading roles: row lr (gates, then the same outputs' ups), pair lt
    let lr = lid >> 2u;
    let lt = lid >> 3u;
    let jl = j0 + lr % half;
    let wrow = select(e * p.F + jl, p.E * p.F + e * p.F + jl, lr >= half);
    var xb = 0u;
    if (lt < sp.y) { xb = p.x_off + (pair_at(sp.x + lt) / p.K) * p.units * 8u; }
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    tile_product(lid, p.w_off + wrow * p.row_bytes, jl < p.F, 0u, xb, lt < sp.y, p.units, &acc0, &acc1);
    // rows tx + TL_RX i: i 0, 1 the gates of outputs j0 + tx + TL_RX i, i 2, 3 their ups
    let tx = lid % TL_RX;
    let ty = lid / TL_RX;
    for (var i = 0u; i < 2u; i++) {
        let j = j0 + tx + TL_RX * i;
        if (j >= p.F) { continue; }
        if (ty < sp.y) {
            let g = acc0[i];
            out[p.out_off + pair_at(sp.x + ty) * p.F + j] = g / (1.0 + exp(-g)) * acc0[i + 2u];
        }
        if (TL_T > TL_TY && ty + TL_TY < sp.y) {
            let g = acc1[i];
            out[p.out_off + pair_at(sp.x + ty + TL_TY) * p.F + j] = g / (1.0 + exp(-g)) * acc1[i + 2u];
        }
    }
}

@compute @workgroup_size(WG)
fn down_grouped(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let e = wid.y;
    let sp = tile_span(lid, e, wid.z);
    if (sp.y == 0u) { return; }
    let r0 = wid.x * TL_R;
    let lr = lid >> 2u;
    let lt = lid >> 3u;
    let wrow = r0 + lr;
    var xb = 0u;
    if (lt < sp.y) { xb = p.x_off + pair_at(sp.x + lt) * (p.F / 4u); }
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    tile_product(lid, p.w_off + wrow * p.row_bytes, wrow < p.n_out, e * p.units, xb, lt < sp.y, p.units, &acc0,
                 &acc1);
    let tx = lid % TL_RX;
    let ty = lid / TL_RX;
    for (var i = 0u; i < 4u; i++) {
        let r = r0 + tx + TL_RX * i;
        if (r >= p.n_out) { continue; }
        if (ty < sp.y) {
            let q = pair_at(sp.x + ty);
            out[p.out_off + q * p.n_out + r] = wts[p.wts_off + q] * acc0[i];
        }
        if (TL_T > TL_TY && ty + TL_TY < sp.y) {
            let q = pair_at(sp.x + ty + TL_TY);
            out[p.out_off + q * p.n_out + r] = wts[p.wts_off + q] * acc1[i];
        }
    }
}
