// Matrix product on the tensor cores with fragments loaded straight from storage (src/ops/
// matmul_tcd.c): out[m, n0 + n] = alpha * sum_k A[m, k] B[k, n] + beta * C[m, n], one product
// (batch 1). A is f16 rows along k (a: row m at p.off_a + m * p.sam), B f16 rows along k too
// (b: B[k, n] at p.off_b + n * p.sbn + k), both holding whole tiles: BM rows of A and BN rows of B
// from every workgroup's start, p.K (a multiple of SK) elements a row, zeros past the true sizes
// (matmul_half.wgsl makes such copies where the operands are not already so).
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
// Staged modes need A's and B's rows and offsets in whole words and p.K a multiple of BK.
// A split along k (p.tpr != 0): workgroup z sums k in [z * p.tpr, (z + 1) * p.tpr) into rows z * M ..
// of out (matmul.c's combine adds them).
// The prelude (matmul_tcd.c) holds the enables, SGS, SGR, SGC, FM, FN, SM, SN, SK, MODE, BK, NBUF,
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

@group(0) @binding(1) var<storage, read> a: array<AW>;
@group(0) @binding(2) var<storage, read> b: array<AW>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> Cs: array<f32, NSG * SM * SN>;
var<workgroup> As: array<f16, select(256u, NBUF * BM * LDS, STAGED)>; // 256: a fragment (Dawn checks)
var<workgroup> Bs: array<f16, select(256u, NBUF * BN * LDS, STAGED)>;
var<private> ra: array<AW, NWA>;
var<private> rb: array<AW, NWB>;

// Slab k0 of the tile's A rows (from element row0) and B rows (from col0) into registers.
fn fetch(row0: u32, col0: u32, k0: u32, t: u32) {
    for (var q = 0u; q < NWA; q++) {
        let w = t + q * NT;
        ra[q] = a[(p.off_a + (row0 + w / (BK / EW)) * p.sam + k0 + (w % (BK / EW)) * EW) / EW];
    }
    for (var q = 0u; q < NWB; q++) {
        let w = t + q * NT;
        rb[q] = b[(p.off_b + (col0 + w / (BK / EW)) * p.sbn + k0 + (w % (BK / EW)) * EW) / EW];
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
    var acc: array<ACC, FM * FN>;
    for (var f = 0u; f < FM * FN; f++) { acc[f] = frag_zero(); }
    if (!STAGED) {
        for (var k = k_lo; k < k_hi; k += SK) {
            var bf: array<RIGHT, FN>;
            for (var j = 0u; j < FN; j++) {
                bf[j] = frag_b(p.off_b + (n0 + j * SN) * p.sbn + k, p.sbn);
            }
            for (var i = 0u; i < FM; i++) {
                let af = frag_a(p.off_a + (m0 + i * SM) * p.sam + k, p.sam);
                for (var j = 0u; j < FN; j++) { acc[i * FN + j] = frag_mma(af, bf[j], acc[i * FN + j]); }
            }
        }
    } else if (NBUF == 1u) {
        for (var k = k_lo; k < k_hi; k += BK) {
            workgroupBarrier();
            fetch(wid.y * BM, wid.x * BN, k, lid);
            stash(0u, lid);
            workgroupBarrier();
            for (var kk = 0u; kk < BK; kk += SK) {
                var bf: array<RIGHT, FN>;
                for (var j = 0u; j < FN; j++) { bf[j] = frag_bs((sn0 + j * SN) * LDS + kk, LDS); }
                for (var i = 0u; i < FM; i++) {
                    let af = frag_as((sm0 + i * SM) * LDS + kk, LDS);
                    for (var j = 0u; j < FN; j++) { acc[i * FN + j] = frag_mma(af, bf[j], acc[i * FN + j]); }
                }
            }
        }
    } else {
        var buf = 0u;
        if (k_lo < k_hi) {
            fetch(wid.y * BM, wid.x * BN, k_lo, lid);
            stash(0u, lid);
        }
        workgroupBarrier();
        for (var k = k_lo; k < k_hi; k += BK) {
            let more = k + BK < k_hi;
            if (more) { fetch(wid.y * BM, wid.x * BN, k + BK, lid); }
            for (var kk = 0u; kk < BK; kk += SK) {
                var bf: array<RIGHT, FN>;
                for (var j = 0u; j < FN; j++) { bf[j] = frag_bs((buf * BN + sn0 + j * SN) * LDS + kk, LDS); }
                for (var i = 0u; i < FM; i++) {
                    let af = frag_as((buf * BM + sm0 + i * SM) * LDS + kk, LDS);
                    for (var j = 0u; j < FN; j++) { acc[i * FN + j] = frag_mma(af, bf[j], acc[i * FN + j]); }
                }
            }
            if (more) { stash(1u - buf, lid); }
            workgroupBarrier();
            buf = 1u - buf;
        }
    }
    let zrow = wid.z * p.M; // a slice of a split k: its own rows of out
    // Whole workgroup tiles without alpha, beta or C: fragments straight into out (uniform test).
    if (p.has_c == 0u && p.alpha == 1.0 && (wid.y + 1u) * BM <= p.M && (wid.x + 1u) * BN <= p.N) {
        for (var f = 0u; f < FM * FN; f++) {
            let m = m0 + (f / FN) * SM;
            let n = n0 + (f % FN) * SN;
            frag_store_out(acc[f], (zrow + m) * p.ldo + p.n0 + n, p.ldo);
        }
        return;
    }
    // Else one fragment at a time through the subgroup's part of Cs, written with the epilogue.
    for (var f = 0u; f < FM * FN; f++) {
        frag_store_cs(acc[f], sg * SM * SN);
        workgroupBarrier();
        for (var q = 0u; q < CE; q++) {
            let e = lane + q * SGS;
            let m = m0 + (f / FN) * SM + e / SN;
            let n = n0 + (f % FN) * SN + e % SN;
            if (m < p.M && n < p.N) {
                var v = p.alpha * Cs[sg * SM * SN + e];
                if (p.has_c != 0u) { v = v + p.beta * ldC(p.off_c + m * p.scm + n * p.scn); }
                out[(zrow + m) * p.ldo + p.n0 + n] = v;
            }
        }
        workgroupBarrier();
    }
}
