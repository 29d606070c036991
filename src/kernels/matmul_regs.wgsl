// Tiled matrix product with register tiles (WGT_MATMUL_TILE, src/ops/matmul.c's regs_choose; the
// job, Params and split k of matmul.wgsl): out[z, m, n0 + n] = alpha * sum_k A[z, m, k] B[z, k, n]
// + beta * C[z, m, n]. out is f32, contiguous, row stride ldo. A workgroup computes a BM x BN tile
// of out; its WG = (BM / TM) * (BN / TN) invocations each own TM x TN outputs (8 x 8 in a 128 x 128
// tile), as TM / 4 x TN / 4 blocks of 4 x 4 spaced TY * 4 rows and TX * 4 columns apart, so that the
// invocations of a subgroup read consecutive 16-byte words of workgroup memory.
// Per k step of BK, A's tile (As, [k][m]) and B's (Bs, [k][n]) go through workgroup memory in two
// stages, each k row of a tile PAD 16-byte words longer than the tile (PAD 1: the stores of modes 0
// and 1, which write one element per k row, fall into different banks; PAD 0: 4-8 of a subgroup's
// stores share a bank): the global loads of step s + 1 are issued into registers before the products of step s
// and stored into the other stage after them (one barrier a step).
// Each operand is loaded (tile_load, tile_store: one function for both, the operand an argument) in
// one of three modes, from the prelude (LA, LB):
//  0: one element per load through ldA / ldB (any strides and dtype; along k where the operand is
//     contiguous in k, else along m or n: coalesced reads);
//  1: 16-byte words along k (the operand contiguous in k: x of a linear layer, a weight [N, K]);
//  2: 16-byte words along m (n) (contiguous in m or n: A^T of a weight's gradient, B [K, N]).
// In modes 1 and 2 the operand's offsets and strides count words of EA (EB) elements, dtype DA (DB)
// as words_to reads them, and the extent along the word (K, or M / N) is a multiple of EA (EB), so a
// word is in range or out whole. Transposed and broadcast operands therefore need no copies.
// With p.tpr != 0 (split k: a small output over a long k, e.g. a weight's gradient), workgroup z
// sums k in [z * tpr, (z + 1) * tpr) into slice z of out, and matmul.wgsl's `combine` adds them.
// The prelude (src/ops/matmul.c) sets BM, BN, BK, TM, TN, PAD, WG, LA, LB, EA, EB, DA, DB, NA, NB (loads
// per invocation a step) and RA, RB (their registers), and pastes lib_matmul.wgsl's "params",
// "words" (words_to, tile_word), "operand a *", "operand b *" (binding a / b, wordA / wordB, the unused loader a stub),
// "bindings c out", and the loaders ldA / ldB / ldC.
// Entry `unrolled` (WGT_MATMUL_TILE_UNROLL) is `main` with the sums in TM x TN / 4 named vec4s
// instead of an array: the prelude (op_wgsl_tile_sums) writes acc_zero, acc_step (one k step's
// products, every statement spelled out) and acc_out (each sum through out4). An array of sums stays in registers
// only where the driver unrolls every loop that indexes it (128 x 128 tiles of 8 x 8 ran at 3% of
// the f32 peak with the array: spilled); named sums leave it nothing to unroll.

const TX: u32 = BN / TN;      // invocations along n
const TY: u32 = BM / TM;      // along m
const PA: u32 = BM / 4u + PAD; // a k row of As, of Bs, in vec4s
const PB: u32 = BN / 4u + PAD;
const SA: u32 = PA * BK;      // a stage of As, of Bs, in vec4s
const SB: u32 = PB * BK;
const STAGE: u32 = SA + SB;

// Both stages of As and Bs: stage s holds As at s * STAGE, Bs at s * STAGE + SA.
var<workgroup> T: array<vec4<f32>, 2u * STAGE>;
// The loads of the next step: A's in regs[0 .. RA), B's in regs[RA .. RA + RB).
var<private> regs: array<vec4<u32>, RA + RB>;

// What the loaders need of the workgroup's tile, per operand (index 0: A, 1: B).
struct TileState {
    lid: u32, kend: u32,
    base: vec2<u32>,   // first element (word) of the operand in its binding
    srow: vec2<u32>,   // stride along m (A) or n (B)
    sk: vec2<u32>,     // stride along k
    rows: vec2<u32>,   // M, N
    r0: vec2<u32>,     // the tile's first row (m0, n0)
    kfast: vec2<bool>, // mode 0: load along k
};
var<private> ts: TileState;

fn ld(op: u32, i: u32) -> f32 {
    if (op == 0u) { return ldA(i); }
    return ldB(i);
}

fn word(op: u32, i: u32) -> vec4<u32> {
    if (op == 0u) { return wordA(i); }
    return wordB(i);
}

// Loads of operand op (0: A, 1: B) for the k step at k0 into its registers.
fn tile_load(op: u32, k0: u32) {
    let mode = select(LB, LA, op == 0u);
    let e = select(EB, EA, op == 0u);      // elements a word
    let br = select(BN, BM, op == 0u);     // tile rows
    let nl = select(NB, NA, op == 0u);
    let g0 = select(RA, 0u, op == 0u);
    let base = ts.base[op];
    let rows = ts.rows[op];
    for (var r = 0u; r < nl; r++) {
        let l = ts.lid + r * WG;
        if (mode == 0u) {
            var row: u32;
            var kk: u32;
            if (ts.kfast[op]) { kk = l % BK; row = l / BK; } else { row = l % br; kk = l / br; }
            let gr = ts.r0[op] + row;
            let gk = k0 + kk;
            var v = 0.0;
            if (l < br * BK && gr < rows && gk < ts.kend) { v = ld(op, base + gr * ts.srow[op] + gk * ts.sk[op]); }
            regs[g0 + r / 4u][r % 4u] = bitcast<u32>(v);
        } else if (mode == 1u) {
            let wr = BK / e; // words a tile row
            var q = vec4<u32>(0u);
            if (l < br * wr) { q = tile_word(op, l, wr, e, ts.r0[op], rows, base, ts.srow[op], k0); }
            regs[g0 + r] = q;
        } else {
            let wr = br / e; // words a k
            let gr = ts.r0[op] + (l % wr) * e;
            let gk = k0 + l / wr;
            var q = vec4<u32>(0u);
            if (l < BK * wr && gr < rows && gk < ts.kend) { q = word(op, base + gk * ts.sk[op] + gr / e); }
            regs[g0 + r] = q;
        }
    }
}

// Operand op's registers into stage s of its tile, stored [k][row].
fn tile_store(op: u32, s: u32) {
    let mode = select(LB, LA, op == 0u);
    let e = select(EB, EA, op == 0u);
    let d = select(DB, DA, op == 0u);
    let br = select(BN, BM, op == 0u);
    let kr = 4u * select(PB, PA, op == 0u); // elements a k row (the tile's and PAD words)
    let nl = select(NB, NA, op == 0u);
    let g0 = select(RA, 0u, op == 0u);
    let t0 = s * STAGE + select(SA, 0u, op == 0u);
    for (var r = 0u; r < nl; r++) {
        let l = ts.lid + r * WG;
        if (mode == 0u) {
            var row: u32;
            var kk: u32;
            if (ts.kfast[op]) { kk = l % BK; row = l / BK; } else { row = l % br; kk = l / br; }
            let i = kk * kr + row;
            if (l < br * BK) { T[t0 + i / 4u][i % 4u] = bitcast<f32>(regs[g0 + r / 4u][r % 4u]); }
        } else if (mode == 1u) {
            let wr = BK / e;
            let row = l / wr;
            let kw = (l % wr) * e;
            if (l < br * wr) {
                let v = words_to(regs[g0 + r], d);
                for (var i = 0u; i < e; i++) {
                    let j = (kw + i) * kr + row;
                    T[t0 + j / 4u][j % 4u] = v[i];
                }
            }
        } else {
            let wr = br / e;
            let j = (l / wr) * kr + (l % wr) * e;
            if (l < BK * wr) {
                let v = words_to(regs[g0 + r], d);
                for (var i = 0u; i < e / 4u; i++) {
                    T[t0 + j / 4u + i] = vec4<f32>(v[4u * i], v[4u * i + 1u], v[4u * i + 2u], v[4u * i + 3u]);
                }
            }
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let z = wid.z + p.z0;
    let bo = batch_offsets(z);
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let tx = lid % TX;
    let ty = lid / TX;
    var kbeg = 0u;
    var kend = p.K;
    if (p.tpr != 0u) {
        kbeg = z * p.tpr;
        kend = min(p.K, kbeg + p.tpr);
    }
    ts = TileState(lid, kend, vec2<u32>(p.off_a + bo.x, p.off_b + bo.y), vec2<u32>(p.sam, p.sbn),
                   vec2<u32>(p.sak, p.sbk), vec2<u32>(p.M, p.N), vec2<u32>(m0, n0),
                   vec2<bool>(p.sak == 1u || p.sam != 1u, p.sbk == 1u && p.sbn != 1u));

    var acc: array<vec4<f32>, TM * TN / 4u>;
    for (var i = 0u; i < TM * TN / 4u; i++) { acc[i] = vec4<f32>(0.0); }

    var steps = 0u;
    if (kend > kbeg) { steps = (kend - kbeg + BK - 1u) / BK; }
    if (steps > 0u) {
        tile_load(0u, kbeg);
        tile_load(1u, kbeg);
        tile_store(0u, 0u);
        tile_store(1u, 0u);
    }
    workgroupBarrier();
    for (var s = 0u; s < steps; s++) {
        let more = s + 1u < steps;
        if (more) {
            tile_load(0u, kbeg + (s + 1u) * BK);
            tile_load(1u, kbeg + (s + 1u) * BK);
        }
        let at = (s % 2u) * STAGE + ty;
        let bt = (s % 2u) * STAGE + SA + tx;
        for (var kk = 0u; kk < BK; kk++) {
            var av: array<vec4<f32>, TM / 4u>;
            var bv: array<vec4<f32>, TN / 4u>;
            for (var g = 0u; g < TM / 4u; g++) { av[g] = T[at + kk * PA + g * TY]; }
            for (var g = 0u; g < TN / 4u; g++) { bv[g] = T[bt + kk * PB + g * TX]; }
            for (var i = 0u; i < TM; i++) {
                let x = vec4<f32>(av[i / 4u][i % 4u]);
                for (var g = 0u; g < TN / 4u; g++) { acc[i * (TN / 4u) + g] = fma(x, bv[g], acc[i * (TN / 4u) + g]); }
            }
        }
        if (more) {
            tile_store(0u, (s + 1u) % 2u);
            tile_store(1u, (s + 1u) % 2u);
        }
        workgroupBarrier();
    }

    for (var i = 0u; i < TM; i++) {
        let m = m0 + (i / 4u) * TY * 4u + ty * 4u + i % 4u;
        if (m < p.M) {
            for (var g = 0u; g < TN / 4u; g++) {
                for (var c = 0u; c < 4u; c++) {
                    let n = n0 + g * TX * 4u + tx * 4u + c;
                    if (n < p.N) {
                        var v = p.alpha * acc[i * (TN / 4u) + g][c];
                        if (p.has_c != 0u) { v = v + p.beta * ldC(p.off_c + bo.z + m * p.scm + n * p.scn); }
                        mm_st((z * p.M + m) * p.ldo + p.n0 + n, v);
                    }
                }
            }
        }
    }
}

// What out4 needs of the workgroup (entry `unrolled`).
struct OutState { m0: u32, n0: u32, tx: u32, ty: u32, z: u32, bo: vec3<u32> };
var<private> os: OutState;

// Sums v of outputs row i, columns 4 g .. 4 g + 3 of this invocation's TM x TN into out.
fn out4(i: u32, g: u32, v: vec4<f32>) {
    let m = os.m0 + (i / 4u) * TY * 4u + os.ty * 4u + i % 4u;
    if (m >= p.M) { return; }
    for (var c = 0u; c < 4u; c++) {
        let n = os.n0 + g * TX * 4u + os.tx * 4u + c;
        if (n < p.N) {
            var r = p.alpha * v[c];
            if (p.has_c != 0u) { r = r + p.beta * ldC(p.off_c + os.bo.z + m * p.scm + n * p.scn); }
            mm_st((os.z * p.M + m) * p.ldo + p.n0 + n, r);
        }
    }
}

@compute @workgroup_size(WG)
fn unrolled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let z = wid.z + p.z0;
    let bo = batch_offsets(z);
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let tx = lid % TX;
    let ty = lid / TX;
    var kbeg = 0u;
    var kend = p.K;
    if (p.tpr != 0u) {
        kbeg = z * p.tpr;
        kend = min(p.K, kbeg + p.tpr);
    }
    ts = TileState(lid, kend, vec2<u32>(p.off_a + bo.x, p.off_b + bo.y), vec2<u32>(p.sam, p.sbn),
                   vec2<u32>(p.sak, p.sbk), vec2<u32>(p.M, p.N), vec2<u32>(m0, n0),
                   vec2<bool>(p.sak == 1u || p.sam != 1u, p.sbk == 1u && p.sbn != 1u));
    os = OutState(m0, n0, tx, ty, z, bo);
    acc_zero();

    var steps = 0u;
    if (kend > kbeg) { steps = (kend - kbeg + BK - 1u) / BK; }
    if (steps > 0u) {
        tile_load(0u, kbeg);
        tile_load(1u, kbeg);
        tile_store(0u, 0u);
        tile_store(1u, 0u);
    }
    workgroupBarrier();
    for (var s = 0u; s < steps; s++) {
        let more = s + 1u < steps;
        if (more) {
            tile_load(0u, kbeg + (s + 1u) * BK);
            tile_load(1u, kbeg + (s + 1u) * BK);
        }
        acc_step((s % 2u) * STAGE + ty, (s % 2u) * STAGE + SA + tx);
        if (more) {
            tile_store(0u, (s + 1u) % 2u);
            tile_store(1u, (s + 1u) % 2u);
        }
        workgroupBarrier();
    }
    acc_out();
}
