// Matrix product through subgroup matrices (the tensor cores): out[z, m, n0 + n] = alpha * sum_k
// A[z, m, k] B[z, k, n] + beta * C[z, m, n], the same job and Params as src/kernels/matmul.wgsl
// (strided loaders ldA, ldB, ldC for any float dtype, out f32 contiguous with row stride ldo).
// A BM x BK tile of A and a BK x BN tile of B are converted into workgroup memory as TT (f16 where
// the device has shader-f16); the WG invocations form NSG = WG / SGS subgroups in a 2 x 2 grid, each
// owning a WM x WN block of the output as FM x FN fragments of SM x SN, accumulated in f32 over
// steps of SK. The fragment operations come from a section of lib_matmul_frag.wgsl: subgroup
// matrices, or the same tiles multiplied by scalar code (devices without them; the tests).
// With p.tpr != 0 (split k), workgroup z sums k in [z * tpr, (z + 1) * tpr) into slice z of out.
//
// The prelude (src/ops/matmul.c) sets BM, BN, BK, WG, SGS, SM, SN, SK, LDA, LDB, TT and the loaders.

struct Params {
    M: u32, N: u32, K: u32, batch: u32,
    off_a: u32, off_b: u32, off_c: u32, has_c: u32,
    sam: u32, sak: u32, sbk: u32, sbn: u32,
    scm: u32, scn: u32, alpha: f32, beta: f32,
    bshape: vec4<u32>,
    bsa: vec4<u32>,
    bsb: vec4<u32>,
    bsc: vec4<u32>,
    ldo: u32, n0: u32, z0: u32, tpr: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const NSG: u32 = WG / SGS;     // subgroups: 4, in 2 x 2
const WM: u32 = BM / 2u;       // a subgroup's output block
const WN: u32 = BN / 2u;
const FM: u32 = WM / SM;       // its fragments
const FN: u32 = WN / SN;
const A_PER: u32 = BM * BK / WG;
const B_PER: u32 = BK * BN / WG;
const CE: u32 = SM * SN / SGS; // output elements per invocation per fragment

var<workgroup> As: array<TT, BM * LDA>; // [m][k]
var<workgroup> Bs: array<TT, BK * LDB>; // [k][n]
var<workgroup> Cs: array<f32, NSG * SM * SN>;

fn batch_offsets(z: u32) -> vec3<u32> {
    var rem = z;
    var o = vec3<u32>(0u, 0u, 0u);
    for (var d = 3i; d >= 0; d = d - 1i) {
        let n = p.bshape[d];
        let i = rem % n;
        rem = rem / n;
        o = o + i * vec3<u32>(p.bsa[d], p.bsb[d], p.bsc[d]);
    }
    return o;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let z = wid.z + p.z0;
    let bo = batch_offsets(z);
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;
    let sg = lid / SGS;
    let lane = lid % SGS;
    frag_init(lane);
    let wm = (sg / 2u) * WM;
    let wn = (sg % 2u) * WN;
    let a_kfast = p.sak == 1u || p.sam != 1u;
    let b_kfast = p.sbk == 1u && p.sbn != 1u;
    let abase = p.off_a + bo.x;
    let bbase = p.off_b + bo.y;
    var kbeg = 0u;
    var kend = p.K;
    if (p.tpr != 0u) {
        kbeg = z * p.tpr;
        kend = min(p.K, kbeg + p.tpr);
    }

    var acc: array<ACC, FM * FN>;
    for (var f = 0u; f < FM * FN; f++) { acc[f] = frag_zero(); }

    for (var k0 = kbeg; k0 < kend; k0 = k0 + BK) {
        for (var r = 0u; r < A_PER; r++) {
            let e = lid + r * WG;
            var kk: u32;
            var mm: u32;
            if (a_kfast) { kk = e % BK; mm = e / BK; } else { mm = e % BM; kk = e / BM; }
            let gm = m0 + mm;
            let gk = k0 + kk;
            var v = 0.0;
            if (gm < p.M && gk < kend) { v = ldA(abase + gm * p.sam + gk * p.sak); }
            As[mm * LDA + kk] = TT(v);
        }
        for (var r = 0u; r < B_PER; r++) {
            let e = lid + r * WG;
            var kk: u32;
            var nn: u32;
            if (b_kfast) { kk = e % BK; nn = e / BK; } else { nn = e % BN; kk = e / BN; }
            let gn = n0 + nn;
            let gk = k0 + kk;
            var w = 0.0;
            if (gn < p.N && gk < kend) { w = ldB(bbase + gk * p.sbk + gn * p.sbn); }
            Bs[kk * LDB + nn] = TT(w);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk = kk + SK) {
            var bf: array<RIGHT, FN>;
            for (var j = 0u; j < FN; j++) { bf[j] = frag_b(kk * LDB + wn + j * SN); }
            for (var i = 0u; i < FM; i++) {
                let af = frag_a((wm + i * SM) * LDA + kk);
                for (var j = 0u; j < FN; j++) { acc[i * FN + j] = frag_mma(af, bf[j], acc[i * FN + j]); }
            }
        }
        workgroupBarrier();
    }

    // Each subgroup stores one fragment at a time into its part of Cs; its invocations then write
    // that fragment's elements out with alpha, beta C and the bounds.
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
                out[(z * p.M + m) * p.ldo + p.n0 + n] = v;
            }
        }
        workgroupBarrier();
    }
}
