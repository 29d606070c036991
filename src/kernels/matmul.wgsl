// Tiled matrix product: out[z, m, n0 + n] = alpha * sum_k A[z, m, k] B[z, k, n] + beta * C[z, m, n].
// A, B and C are read through strided loaders (ldA, ldB, ldC from the prelude, any float dtype),
// so transposed and broadcast operands need no copies; out is f32, contiguous, row stride ldo.
// The prelude (src/ops/matmul.c) also sets BM (tile rows and columns: 64 or 128), TM (output
// columns per invocation: BM / 16), BK (the k step) and WG (invocations per workgroup: 256, or 128
// where the device allows no more). The WG invocations form 16 columns x WG / 16 rows; each
// computes TM columns x TMR = BM / (WG / 16) rows of the tile (TM x TM at 256).
// With p.tpr != 0 (split k: a small output over a long k, e.g. a weight's gradient), workgroup z
// sums k in [z * tpr, (z + 1) * tpr) into slice z of out, and `combine` adds the slices.
// Params, p, batch_offsets and the bindings are lib_matmul.wgsl's sections "params" and
// "bindings float", in the prelude.

const THREADS: u32 = WG;
const TMR: u32 = BM * 16u / WG;       // tile rows per invocation
const A_PER: u32 = BM * BK / THREADS; // tile elements each invocation loads per operand

// Tiles stored k-major: As[k][m], Bs[k][n], as vec4 so the inner loop reads 4 outputs' operands at once.
var<workgroup> As: array<vec4<f32>, BM * BK / 4u>;
var<workgroup> Bs: array<vec4<f32>, BM * BK / 4u>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let z = wid.z + p.z0;
    let bo = batch_offsets(z);
    let m0 = wid.y * BM;
    let n0 = wid.x * BM;
    let tx = lid % 16u;
    let ty = lid / 16u;
    // Load order: along k when the operand is contiguous in k, else along m (n): coalesced reads.
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

    var acc: array<array<f32, TM>, TMR>;
    for (var i = 0u; i < TMR; i++) {
        for (var j = 0u; j < TM; j++) { acc[i][j] = 0.0; }
    }

    for (var k0 = kbeg; k0 < kend; k0 = k0 + BK) {
        for (var r = 0u; r < A_PER; r++) {
            let e = lid + r * THREADS;
            var kk: u32;
            var mm: u32;
            if (a_kfast) { kk = e % BK; mm = e / BK; } else { mm = e % BM; kk = e / BM; }
            let gm = m0 + mm;
            let gk = k0 + kk;
            var v = 0.0;
            if (gm < p.M && gk < kend) { v = ldA(abase + gm * p.sam + gk * p.sak); }
            let t = kk * BM + mm;
            As[t / 4u][t % 4u] = v;
            var nn: u32;
            if (b_kfast) { kk = e % BK; nn = e / BK; } else { nn = e % BM; kk = e / BM; }
            let gn = n0 + nn;
            let gk2 = k0 + kk;
            var w = 0.0;
            if (gn < p.N && gk2 < kend) { w = ldB(bbase + gk2 * p.sbk + gn * p.sbn); }
            let u = kk * BM + nn;
            Bs[u / 4u][u % 4u] = w;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            // this invocation's rows are ty * TMR .. + TMR, columns tx * TM .. + TM
            var av: array<f32, TMR>;
            var bv: array<f32, TM>;
            for (var q = 0u; q < TM / 4u; q++) {
                let x = As[(kk * BM + ty * TMR) / 4u + q];
                let y = Bs[(kk * BM + tx * TM) / 4u + q];
                av[q * 4u] = x.x; av[q * 4u + 1u] = x.y; av[q * 4u + 2u] = x.z; av[q * 4u + 3u] = x.w;
                bv[q * 4u] = y.x; bv[q * 4u + 1u] = y.y; bv[q * 4u + 2u] = y.z; bv[q * 4u + 3u] = y.w;
            }
            for (var q = TM / 4u; q < TMR / 4u; q++) { // rows past TM (fewer than 256 invocations)
                let x = As[(kk * BM + ty * TMR) / 4u + q];
                av[q * 4u] = x.x; av[q * 4u + 1u] = x.y; av[q * 4u + 2u] = x.z; av[q * 4u + 3u] = x.w;
            }
            for (var i = 0u; i < TMR; i++) {
                for (var j = 0u; j < TM; j++) { acc[i][j] = fma(av[i], bv[j], acc[i][j]); }
            }
        }
        workgroupBarrier();
    }

    for (var i = 0u; i < TMR; i++) {
        let m = m0 + ty * TMR + i;
        if (m >= p.M) { break; }
        for (var j = 0u; j < TM; j++) {
            let n = n0 + tx * TM + j;
            if (n >= p.N) { break; }
            var v = p.alpha * acc[i][j];
            if (p.has_c != 0u) { v = v + p.beta * ldC(p.off_c + bo.z + m * p.scm + n * p.scn); }
            mm_st((z * p.M + m) * p.ldo + p.n0 + n, v);
        }
    }
}

// Split k: out[m, n0 + n] = alpha * sum over the p.batch slices of a (f32 [batch, M, N] from
// element off_a) + beta * C[m, n]; one invocation per output element.
@compute @workgroup_size(WG)
fn combine(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i = gid.x + gid.y * nw.x * WG;
    let mn = p.M * p.N;
    if (i >= mn) { return; }
    let m = i / p.N;
    let n = i % p.N;
    var s = 0.0;
    for (var zz = 0u; zz < p.batch; zz++) { s = s + bitcast<f32>(a[p.off_a + zz * mn + i]); }
    var v = p.alpha * s;
    if (p.has_c != 0u) { v = v + p.beta * ldC(p.off_c + m * p.scm + n * p.scn); }
    mm_st(m * p.ldo + p.n0 + n, v);
}
