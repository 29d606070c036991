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
// The prelude (matmul_tcd.c) holds the enables, SGS, SGR, SGC, FM, FN, SM, SN, SK, lib_matmul's
// "params", ldC (C's loader) and a fragment section of lib_matmul_tcd.wgsl (subgroup matrices, or
// scalar code with the same tiles: WGT_MATMUL_TCD=emulate, the tests on CPU adapters).

const NSG: u32 = SGR * SGC;
const WM: u32 = FM * SM;
const WN: u32 = FN * SN;
const BM: u32 = SGR * WM;
const BN: u32 = SGC * WN;
const CE: u32 = SM * SN / SGS; // elements of a fragment per invocation

@group(0) @binding(1) var<storage, read> a: array<f16>;
@group(0) @binding(2) var<storage, read> b: array<f16>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> Cs: array<f32, NSG * SM * SN>;

@compute @workgroup_size(NSG * SGS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let sg = lid / SGS;
    let lane = lid % SGS;
    frag_init(lane);
    let m0 = wid.y * BM + (sg / SGC) * WM;
    let n0 = wid.x * BN + (sg % SGC) * WN;
    var acc: array<ACC, FM * FN>;
    for (var f = 0u; f < FM * FN; f++) { acc[f] = frag_zero(); }
    for (var k = 0u; k < p.K; k += SK) {
        var bf: array<RIGHT, FN>;
        for (var j = 0u; j < FN; j++) {
            bf[j] = frag_b(p.off_b + (n0 + j * SN) * p.sbn + k, p.sbn);
        }
        for (var i = 0u; i < FM; i++) {
            let af = frag_a(p.off_a + (m0 + i * SM) * p.sam + k, p.sam);
            for (var j = 0u; j < FN; j++) { acc[i * FN + j] = frag_mma(af, bf[j], acc[i * FN + j]); }
        }
    }
    // Whole workgroup tiles without alpha, beta or C: fragments straight into out (uniform test).
    if (p.has_c == 0u && p.alpha == 1.0 && (wid.y + 1u) * BM <= p.M && (wid.x + 1u) * BN <= p.N) {
        for (var f = 0u; f < FM * FN; f++) {
            let m = m0 + (f / FN) * SM;
            let n = n0 + (f % FN) * SN;
            frag_store_out(acc[f], m * p.ldo + p.n0 + n, p.ldo);
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
                out[m * p.ldo + p.n0 + n] = v;
            }
        }
        workgroupBarrier();
    }
}
