// Matrix product on the tensor cores with fragments loaded straight from storage (src/ops/
// matmul_tcd.c): out[m, n0 + n] = alpha * sum_k A[m, k] B[k, n] + beta * C[m, n], one product
// (batch 1). A is f16 rows along k (a: row m at p.off_a + m * p.sam), B f16 rows along k too
// (b: B[k, n] at p.off_b + n * p.sbn + k), both holding whole tiles: BM rows of A and BN rows of B
// from every workgroup's start, p.K (a multiple of SK) elements a row, zeros past the true sizes
// (matmul_half.wgsl makes such copies where the operands are not already so). Staged modes need
// only whole k slabs (rows past M or N read the last row), and in 4-byte words (MODE 2, 3) A may
// be f32 rows (A_F32: AWA is vec2<f32>, rounded to f16 as it is staged: no copy of the activations).
// bench/tc_peak.c measured the fragment products alone at 648 TFLOP/s on the H200, also when
// every fragment came from memory; matmul_tc.wgsl, which stages tiles through workgroup memory,
// stayed below 30: here there is no staging, no barrier in the k loop, and L1 / L2 share the
// fragment loads of neighbouring subgroups and workgroups.
// The NSG = SGR x SGC subgroups of a workgroup each own WM x WN outputs: FM x FN fragments of
// SM x SN, summed in f32 over k in steps of SK.
// Where the fragments come from (MODE; bench/tc_peak.c --gemm measured each on the H200):
//   0  straight from storage (a and b are array<f16>);
//   1  workgroup memory: k slabs of BK staged by 16-byte loads (a, b: array<vec4<u32>>), 2 barriers a slab;
//   2  the same staged by 4-byte loads (array<u32>);
//   3  as 2, double-buffered: the next slab's loads held in registers during the products, 1 barrier;
//   4  as 1, double-buffered.
// p.K is a multiple of BK in every mode; staged modes need A's and B's rows and offsets in whole
// words.
// A split along k (p.tpr != 0): workgroup z sums k in [z * p.tpr, (z + 1) * p.tpr) into rows z * M ..
// of out (matmul.c's combine adds them).
// The prelude (matmul_tcd.c) holds the enables, SGS, SGR, SGC, FM, FN, SM, SN, SK, MODE, BK, NBUF,
// EPI_TILE (whole tiles with alpha or C: fragments stored, then fix_tile; else through Cs), RAGGED
// (fetch clamps rows to M and N), AWA (a
// word of a) with word_a(w) (it as AW),
// AW (a word of a and b) with word(w, j) (its j-th u32), lib_matmul's "params", ldC (C's loader)
// and the fragment sections of lib_matmul_tcd.wgsl (subgroup matrices, or scalar code with the same
// tiles: WGT_MATMUL_TCD=emulate, the tests on CPU adapters).

const NSG: u32 = SGR * SGC;
const NT: u32 = NSG * SGS;
const WM: u32 = FM * SM;
const WN: u32 = FN * SN;
const BM: u32 = SGR * WM;
const BN: u32 = SGC * WN;
const CE: u32 = SM * SN / SGS; // elements of a fragment per invocation
const STAGED: bool = MODE != 0u;
const LDS: u32 = BK + 8u; // a staged row, padded: 16-byte aligned, consecutive rows on other banks
const EW: u32 = select(8u, 2u, MODE == 2u || MODE == 3u); // f16 elements a staged word
const NWA: u32 = max(BM * BK / EW / NT, 1u); // words of A an invocation stages a slab
const NWB: u32 = max(BN * BK / EW / NT, 1u);

@group(0) @binding(1) var<storage, read> a: array<AWA>;
@group(0) @binding(2) var<storage, read> b: array<AW>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> Cs: array<f32, NSG * SM * SN>;
var<workgroup> As: array<f16, select(256u, NBUF * BM * LDS, STAGED)>; // 256: a fragment (Dawn checks)
var<workgroup> Bs: array<f16, select(256u, NBUF * BN * LDS, STAGED)>;
var<private> ra: array<AW, NWA>;
var<private> rb: array<AW, NWB>;

// Slab k0 of the tile's A rows (from element row0) and B rows (from col0) into registers. With RAGGED
// (operands read as they are, M or N not whole tiles) rows past M (N) read the last one: a ragged edge
// needs no padded copy, and its outputs are never stored.
fn fetch(row0: u32, col0: u32, k0: u32, t: u32) {
    for (var q = 0u; q < NWA; q++) {
        let w = t + q * NT;
        var r = row0 + w / (BK / EW);
        if (RAGGED) { r = min(r, p.M - 1u); }
        ra[q] = word_a(a[(p.off_a + r * p.sam + k0 + (w % (BK / EW)) * EW) / EW]);
    }
    for (var q = 0u; q < NWB; q++) {
        let w = t + q * NT;
        var r = col0 + w / (BK / EW);
        if (RAGGED) { r = min(r, p.N - 1u); }
        rb[q] = b[(p.off_b + r * p.sbn + k0 + (w % (BK / EW)) * EW) / EW];
    }
}

// The registers into buffer buf of As / Bs (rows of LDS).
fn stash(buf: u32, t: u32) {
    for (var q = 0u; q < NWA; q++) {
        let w = t + q * NT;
        let i = (buf * BM + w / (BK / EW)) * LDS + (w % (BK / EW)) * EW;
        for (var j = 0u; j < EW / 2u; j++) {
            let h = bitcast<vec2<f16>>(word(ra[q], j));
            As[i + 2u * j] = h.x;
            As[i + 2u * j + 1u] = h.y;
        }
    }
    for (var q = 0u; q < NWB; q++) {
        let w = t + q * NT;
        let i = (buf * BN + w / (BK / EW)) * LDS + (w % (BK / EW)) * EW;
        for (var j = 0u; j < EW / 2u; j++) {
            let h = bitcast<vec2<f16>>(word(rb[q], j));
            Bs[i + 2u * j] = h.x;
            Bs[i + 2u * j + 1u] = h.y;
        }
    }
}

// The fragments of A (row block i of the subgroup's) and B (column block j) at k + kk: from storage,
// or from buffer buf of the staged slab.
fn load_a(i: u32, m0: u32, sm0: u32, k: u32, kk: u32, buf: u32) -> LEFT {
    if (STAGED) { return frag_as((buf * BM + sm0 + i * SM) * LDS + kk, LDS); }
    return frag_a(p.off_a + (m0 + i * SM) * p.sam + k + kk, p.sam);
}
fn load_b(j: u32, n0: u32, sn0: u32, k: u32, kk: u32, buf: u32) -> RIGHT {
    if (STAGED) { return frag_bs((buf * BN + sn0 + j * SN) * LDS + kk, LDS); }
    return frag_b(p.off_b + (n0 + j * SN) * p.sbn + k + kk, p.sbn);
}

// Accumulator (i, j) into out: straight from the fragment where the workgroup's tile is whole (the
// epilogue, if any, then runs over the stored rows: fix_tile), else through the subgroup's part of
// Cs with the epilogue (whole is uniform in the workgroup).
fn emit(c: ACC, i: u32, j: u32, m0: u32, n0: u32, sg: u32, lane: u32, zrow: u32, whole: bool) {
    if (whole) {
        frag_store_out(c, (zrow + m0 + i * SM) * p.ldo + p.n0 + n0 + j * SN, p.ldo);
        return;
    }
    frag_store_cs(c, sg * SM * SN);
    workgroupBarrier();
    for (var q = 0u; q < CE; q++) {
        let e = lane + q * SGS;
        let m = m0 + i * SM + e / SN;
        let n = n0 + j * SN + e % SN;
        if (m < p.M && n < p.N) {
            var v = p.alpha * Cs[sg * SM * SN + e];
            if (p.has_c != 0u) { v = v + p.beta * ldC(p.off_c + m * p.scm + n * p.scn); }
            out[(zrow + m) * p.ldo + p.n0 + n] = v;
        }
    }
    workgroupBarrier();
}

// alpha and beta C over the subgroup's WM x WN outputs of a whole tile, once its fragments are
// stored: one barrier for the workgroup instead of two a fragment through Cs (the q/k/v product's
// bias ran at 4.8 TFLOP/s that way, bench/results/h200/tcd-staged-2026-12-03).
fn fix_tile(m0: u32, n0: u32, lane: u32, zrow: u32) {
    storageBarrier();
    for (var e = lane; e < WM * WN; e += SGS) {
        let m = m0 + e / WN;
        let n = n0 + e % WN;
        let o = (zrow + m) * p.ldo + p.n0 + n;
        var v = p.alpha * out[o];
        if (p.has_c != 0u) { v = v + p.beta * ldC(p.off_c + m * p.scm + n * p.scn); }
        out[o] = v;
    }
}

// The accumulators and fragments are named variables, not arrays: an array of subgroup matrices
// indexed in a loop the driver does not unroll lives in local memory (bench/results/h200/
// tcd-staged-2026-12-03: staging alone left the products at the register tiles' rate). FM and FN
// are at most 4; the branches on them are constant.
@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let sg = lid / SGS;
    let lane = lid % SGS;
    frag_init(lane);
    let sm0 = (sg / SGC) * WM; // the subgroup's rows and columns within the workgroup's tile
    let sn0 = (sg % SGC) * WN;
    let m0 = wid.y * BM + sm0;
    let n0 = wid.x * BN + sn0;
    var k_lo = 0u;
    var k_hi = p.K;
    if (p.tpr != 0u) { k_lo = wid.z * p.tpr; k_hi = min(p.K, k_lo + p.tpr); }
    var c00 = frag_zero();
    var c01 = frag_zero();
    var c02 = frag_zero();
    var c03 = frag_zero();
    var c10 = frag_zero();
    var c11 = frag_zero();
    var c12 = frag_zero();
    var c13 = frag_zero();
    var c20 = frag_zero();
    var c21 = frag_zero();
    var c22 = frag_zero();
    var c23 = frag_zero();
    var c30 = frag_zero();
    var c31 = frag_zero();
    var c32 = frag_zero();
    var c33 = frag_zero();
    var b0 = RIGHT();
    var b1 = RIGHT();
    var b2 = RIGHT();
    var b3 = RIGHT();
    var buf = 0u;
    if (STAGED && NBUF == 2u) {
        if (k_lo < k_hi) {
            fetch(wid.y * BM, wid.x * BN, k_lo, lid);
            stash(0u, lid);
        }
        workgroupBarrier();
    }
    for (var k = k_lo; k < k_hi; k += BK) {
        let more = k + BK < k_hi;
        if (STAGED && NBUF == 1u) {
            workgroupBarrier();
            fetch(wid.y * BM, wid.x * BN, k, lid);
            stash(0u, lid);
            workgroupBarrier();
        }
        if (STAGED && NBUF == 2u && more) { fetch(wid.y * BM, wid.x * BN, k + BK, lid); }
        for (var kk = 0u; kk < BK; kk += SK) {
            if (FN > 0u) { b0 = load_b(0u, n0, sn0, k, kk, buf); }
            if (FN > 1u) { b1 = load_b(1u, n0, sn0, k, kk, buf); }
            if (FN > 2u) { b2 = load_b(2u, n0, sn0, k, kk, buf); }
            if (FN > 3u) { b3 = load_b(3u, n0, sn0, k, kk, buf); }
            if (FM > 0u) {
                let a0 = load_a(0u, m0, sm0, k, kk, buf);
                if (FN > 0u) { c00 = frag_mma(a0, b0, c00); }
                if (FN > 1u) { c01 = frag_mma(a0, b1, c01); }
                if (FN > 2u) { c02 = frag_mma(a0, b2, c02); }
                if (FN > 3u) { c03 = frag_mma(a0, b3, c03); }
            }
            if (FM > 1u) {
                let a1 = load_a(1u, m0, sm0, k, kk, buf);
                if (FN > 0u) { c10 = frag_mma(a1, b0, c10); }
                if (FN > 1u) { c11 = frag_mma(a1, b1, c11); }
                if (FN > 2u) { c12 = frag_mma(a1, b2, c12); }
                if (FN > 3u) { c13 = frag_mma(a1, b3, c13); }
            }
            if (FM > 2u) {
                let a2 = load_a(2u, m0, sm0, k, kk, buf);
                if (FN > 0u) { c20 = frag_mma(a2, b0, c20); }
                if (FN > 1u) { c21 = frag_mma(a2, b1, c21); }
                if (FN > 2u) { c22 = frag_mma(a2, b2, c22); }
                if (FN > 3u) { c23 = frag_mma(a2, b3, c23); }
            }
            if (FM > 3u) {
                let a3 = load_a(3u, m0, sm0, k, kk, buf);
                if (FN > 0u) { c30 = frag_mma(a3, b0, c30); }
                if (FN > 1u) { c31 = frag_mma(a3, b1, c31); }
                if (FN > 2u) { c32 = frag_mma(a3, b2, c32); }
                if (FN > 3u) { c33 = frag_mma(a3, b3, c33); }
            }
        }
        if (STAGED && NBUF == 2u) {
            if (more) { stash(1u - buf, lid); }
            workgroupBarrier();
            buf = 1u - buf;
        }
    }
    let zrow = wid.z * p.M; // a slice of a split k: its own rows of out
    let plain = p.has_c == 0u && p.alpha == 1.0;
    let whole = (EPI_TILE || plain) && (wid.y + 1u) * BM <= p.M && (wid.x + 1u) * BN <= p.N;
    if (FM > 0u && FN > 0u) { emit(c00, 0u, 0u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 0u && FN > 1u) { emit(c01, 0u, 1u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 0u && FN > 2u) { emit(c02, 0u, 2u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 0u && FN > 3u) { emit(c03, 0u, 3u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 1u && FN > 0u) { emit(c10, 1u, 0u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 1u && FN > 1u) { emit(c11, 1u, 1u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 1u && FN > 2u) { emit(c12, 1u, 2u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 1u && FN > 3u) { emit(c13, 1u, 3u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 2u && FN > 0u) { emit(c20, 2u, 0u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 2u && FN > 1u) { emit(c21, 2u, 1u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 2u && FN > 2u) { emit(c22, 2u, 2u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 2u && FN > 3u) { emit(c23, 2u, 3u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 3u && FN > 0u) { emit(c30, 3u, 0u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 3u && FN > 1u) { emit(c31, 3u, 1u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 3u && FN > 2u) { emit(c32, 3u, 2u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 3u && FN > 3u) { emit(c33, 3u, 3u, m0, n0, sg, lane, zrow, whole); }
    if (EPI_TILE && whole && !plain) { fix_tile(m0, n0, lane, zrow); }
}
