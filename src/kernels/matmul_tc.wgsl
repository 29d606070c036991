// Matrix product through subgroup matrices (the tensor cores): out[z, m, n0 + n] = alpha * sum_k
// A[z, m, k] B[z, k, n] + beta * C[z, m, n], the same job and Params as src/kernels/matmul.wgsl.
// A BM x BK tile of A (As, [m][k]) and a BK x BN tile of B (Bs, [n][k]) are converted into
// workgroup memory as TT (f16 where the device has shader-f16), two stages of each: the global
// loads of step k + 1 are issued into registers before the fragment products of step k, and
// stored into the other stage after them (one barrier a step). The WG invocations form
// NSG = WG / SGS subgroups in an SGR x SGC grid, each owning a WM x WN block of the output as
// FM x FN fragments of SM x SN, accumulated in f32 over steps of SK. The fragment operations come
// from a section of lib_matmul_frag.wgsl (subgroup matrices, or the same tiles multiplied by scalar
// code: devices without them, the tests); the loaders from lib_matmul.wgsl: "tc load scalar" (any
// strides, ldA / ldB), or "tc load split" with A's 16-byte loads ("tc load vec", A contiguous in
// k) and B's ("tc load b vec": B contiguous in k; "tc load b q": GGUF blocks, qlinear.wgsl's piece).
// Whole tiles with no alpha, beta or C are stored from the fragments straight into out.
// With p.tpr != 0 (split k), workgroup z sums k in [z * tpr, (z + 1) * tpr) into slice z of out.
//
// The prelude (src/ops/matmul.c) holds lib_matmul's params and bindings, BM, BN, BK, WG, SGS, SGR,
// SGC, SM, SN, SK, LDA, LDB, TT (and EA, EB, DA, DB for the 16-byte loads; FMT and qlinear.wgsl's
// decoders for blocks), ldA / ldB / ldC, and the fragment and loader sections.

const NSG: u32 = WG / SGS;
const WM: u32 = BM / SGR; // a subgroup's output block
const WN: u32 = BN / SGC;
const FM: u32 = WM / SM;  // its fragments
const FN: u32 = WN / SN;
const TA: u32 = BM * LDA; // one stage of As, of Bs
const TB: u32 = BN * LDB;
const CE: u32 = SM * SN / SGS; // output elements per invocation per fragment

var<workgroup> As: array<TT, 2u * TA>;
var<workgroup> Bs: array<TT, 2u * TB>;
var<workgroup> Cs: array<f32, NSG * SM * SN>;

// What the loaders need of the workgroup's tile.
struct TileState {
    lid: u32, m0: u32, n0: u32, kend: u32, abase: u32, bbase: u32, a_kfast: bool, b_kfast: bool,
};
var<private> ts: TileState;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let z = wid.z + p.z0;
    let bo = batch_offsets(z);
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let sg = lid / SGS;
    let lane = lid % SGS;
    frag_init(lane);
    let wm = (sg / SGC) * WM;
    let wn = (sg % SGC) * WN;
    var kbeg = 0u;
    var kend = p.K;
    if (p.tpr != 0u) {
        kbeg = z * p.tpr;
        kend = min(p.K, kbeg + p.tpr);
    }
    ts = TileState(lid, m0, n0, kend, p.off_a + bo.x, p.off_b + bo.y, p.sak == 1u || p.sam != 1u,
                   p.sbk == 1u && p.sbn != 1u);

    var acc: array<ACC, FM * FN>;
    for (var f = 0u; f < FM * FN; f++) { acc[f] = frag_zero(); }

    var steps = 0u;
    if (kend > kbeg) { steps = (kend - kbeg + BK - 1u) / BK; }
    if (steps > 0u) {
        tile_load(kbeg);
        tile_store(0u);
    }
    workgroupBarrier();
    for (var s = 0u; s < steps; s++) {
        let more = s + 1u < steps;
        if (more) { tile_load(kbeg + (s + 1u) * BK); }
        let ao = (s % 2u) * TA + wm * LDA;
        let bo2 = (s % 2u) * TB + wn * LDB;
        for (var kk = 0u; kk < BK; kk = kk + SK) {
            var bf: array<RIGHT, FN>;
            for (var j = 0u; j < FN; j++) { bf[j] = frag_b(bo2 + j * SN * LDB + kk); }
            for (var i = 0u; i < FM; i++) {
                let af = frag_a(ao + i * SM * LDA + kk);
                for (var j = 0u; j < FN; j++) { acc[i * FN + j] = frag_mma(af, bf[j], acc[i * FN + j]); }
            }
        }
        if (more) { tile_store((s + 1u) % 2u); }
        workgroupBarrier();
    }

    if (p.has_c == 0u && p.alpha == 1.0 && m0 + BM <= p.M && n0 + BN <= p.N) {
        for (var f = 0u; f < FM * FN; f++) {
            let m = m0 + wm + (f / FN) * SM;
            let n = n0 + wn + (f % FN) * SN;
            frag_store_out(acc[f], (z * p.M + m) * p.ldo + p.n0 + n, p.ldo);
        }
        return;
    }
    // Else each subgroup stores one fragment at a time into its part of Cs; its invocations then
    // write that fragment's elements out with alpha, beta C and the bounds.
    for (var f = 0u; f < FM * FN; f++) {
        frag_store(acc[f], sg * SM * SN);
        workgroupBarrier();
        for (var q = 0u; q < CE; q++) {
            let e = lane + q * SGS;
            let m = m0 + wm + (f / FN) * SM + e / SN;
            let n = n0 + wn + (f % FN) * SN + e % SN;
            if (m < p.M && n < p.N) {
                var v = p.alpha * Cs[sg * SM * SN + e];
                if (p.has_c != 0u) { v = v + p.beta * ldC(p.off_c + bo.z + m * p.scm + n * p.scn); }
                mm_st((z * p.M + m) * p.ldo + p.n0 + n, v);
            }
        }
        workgroupBarrier();
    }
}
