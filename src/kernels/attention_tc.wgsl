// Scaled dot-product attention of many query rows (prefill) through subgroup matrices (the tensor
// cores): flash style, one workgroup per BQ consecutive query rows of one head, the keys visited in
// blocks of BKV with an online softmax (running max m and sum l per row, f32). Per block:
//   S = Q K^T     fragments SM x SN over k steps of SK of D, Q and the block of K in workgroup
//                 memory as TT (f16 where the device has shader-f16), S stored to Ss in f32;
//   softmax       BQ rows of TPR invocations each: scale, causal cut, block max, P = exp(S - m)
//                 as TT into Ps, row sums;
//   O += P V      fragments of the block's P V stored to Ss (f32), added into each invocation's
//                 share of the rows' outputs (registers) after the rescale exp(m_old - m_new).
// The output [B, Hq, Lq, DV] at p.off_m with strides p.sm (no mask here; attention.c may store it
// token-major). GQA/MQA: head h reads kv head h / p.group (k and v are not repeated). Causal: key j is visible
// to query i when j <= coff + i (attention.c sends only coff >= 0: every row sees a key). NaN or
// +inf scores make their row NaN, as attention.wgsl. The heaviest query blocks (the last, under
// causal) are dispatched first.
// The fragment operations come from lib_attention.wgsl's "tc frag subgroup matrix" section (the
// tensor cores) or its "tc frag scalar" one (the same tiles in scalar code: CPU adapters, the tests).
// The prelude (src/ops/attention.c) holds BQ, BKV, D, DV, WG, SGS, SM, SN, SK, LDQ, LDK, LDV, LDP,
// LDS, TT, lib_attention's params and nan sections, the loaders ldq, ldk, ldv (f32) and the
// fragment section.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<u32>;
@group(0) @binding(2) var<storage, read> k: array<u32>;
@group(0) @binding(3) var<storage, read> v: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const NSG: u32 = WG / SGS;
const TPR: u32 = WG / BQ;                // invocations per query row in the softmax
const CPT: u32 = BKV / TPR;              // scores per invocation
const OPT: u32 = (DV + TPR - 1u) / TPR;  // output features per invocation
const FS: u32 = (BQ / SM) * (BKV / SN);  // fragments of S, of P V
const FO: u32 = (BQ / SM) * (DV / SN);

var<workgroup> Qs: array<TT, BQ * LDQ>;
var<workgroup> Ks: array<TT, BKV * LDK>;
var<workgroup> Vs: array<TT, BKV * LDV>;
var<workgroup> Ps: array<TT, BQ * LDP>;
var<workgroup> Ss: array<f32, BQ * LDS>; // S, then the block's P V
var<workgroup> red: array<vec2<f32>, WG>; // (max, bad) partials, then (sum, bad) partials

// Element e of the block of BKV keys (v false) or values (v true) from key j0, rows w wide: key
// row j0 + e / w, column e % w of the tensor at base with row and column strides rs and cs; 0 past
// key kend.
fn kv_elem(v: bool, base: u32, rs: u32, cs: u32, w: u32, e: u32, j0: u32, kend: u32) -> TT {
    let j = j0 + e / w;
    var x = 0.0;
    if (j < kend) {
        let i = base + j * rs + (e % w) * cs;
        if (v) { x = ldv(i); } else { x = ldk(i); }
    }
    return TT(x);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = wid.x + wid.y * nwg.x;
    let nqb = (p.Lq + BQ - 1u) / BQ;
    let q0 = (nqb - 1u - t % nqb) * BQ;
    let h = (t / nqb) % p.Hq;
    let b = t / (nqb * p.Hq);
    if (b >= p.B) { return; } // the grid is rounded up; uniform across the workgroup
    let hk = h / p.group;
    let sg = lid / SGS;
    fr_init(lid % SGS);
    let nrows = min(BQ, p.Lq - q0);
    var kend = p.Lk;
    if (p.causal != 0u) { kend = min(p.Lk, u32(i32(q0 + nrows) + p.coff)); }
    let qb = p.off_q + b * p.sq.x + h * p.sq.y;
    let kb = p.off_k + b * p.sk.x + hk * p.sk.y;
    let vb = p.off_v + b * p.sv.x + hk * p.sv.y;
    for (var e = lid; e < BQ * D; e = e + WG) {
        let r = e / D;
        let d = e % D;
        var x = 0.0;
        if (r < nrows) { x = ldq(qb + (q0 + r) * p.sq.z + d * p.sq.w); }
        Qs[r * LDQ + d] = TT(x);
    }
    // this invocation's row and share of the softmax and of the outputs
    let row = lid / TPR;
    let part = lid % TPR;
    let qi = q0 + row;
    var last = i32(p.Lk) - 1; // the last key the row sees
    if (p.causal != 0u) { last = min(last, i32(qi) + p.coff); }
    let ninf = neg_inf();
    var m = ninf;
    var l = 0.0;
    var bad = false;
    var o: array<f32, OPT>;
    for (var u = 0u; u < OPT; u++) { o[u] = 0.0; }

    for (var j0 = 0u; j0 < kend; j0 = j0 + BKV) {
        for (var e = lid; e < BKV * D; e = e + WG) { Ks[e / D * LDK + e % D] = kv_elem(false, kb, p.sk.z, p.sk.w, D, e, j0, kend); }
        for (var e = lid; e < BKV * DV; e = e + WG) { Vs[e / DV * LDV + e % DV] = kv_elem(true, vb, p.sv.z, p.sv.w, DV, e, j0, kend); }
        workgroupBarrier();
        for (var f = sg; f < FS; f = f + NSG) {
            let fm = f / (BKV / SN);
            let fc = f % (BKV / SN);
            var acc = fr_zero();
            for (var kk = 0u; kk < D; kk = kk + SK) { acc = fr_qk(acc, fm * SM * LDQ + kk, fc * SN * LDK + kk); }
            fr_store(acc, fm * SM * LDS + fc * SN, LDS);
        }
        workgroupBarrier();
        // the row's block maximum over its TPR invocations
        var s: array<f32, CPT>;
        var pm = ninf;
        var pb = false;
        for (var u = 0u; u < CPT; u++) {
            let j = part + u * TPR;
            var x = ninf;
            if (row < nrows && i32(j0 + j) <= last) {
                x = Ss[row * LDS + j] * p.scale;
                pb = pb || is_nan(x) || bitcast<u32>(x) == 0x7f800000u;
            }
            s[u] = x;
            pm = nmax(pm, x);
        }
        red[lid] = vec2<f32>(pm, select(0.0, 1.0, pb));
        workgroupBarrier();
        var bm = ninf;
        for (var i = 0u; i < TPR; i++) {
            let r = red[row * TPR + i];
            bm = nmax(bm, r.x);
            bad = bad || r.y > 0.0;
        }
        let m_new = nmax(m, bm);
        // rows that have seen only masked keys so far keep m = -inf and add nothing
        let seen = m_new != ninf;
        var ps = 0.0;
        for (var u = 0u; u < CPT; u++) {
            var e = TT(0.0);
            if (seen) { e = TT(exp(s[u] - m_new)); }
            Ps[row * LDP + part + u * TPR] = e;
            ps = ps + f32(e);
        }
        let corr = select(1.0, exp(m - m_new), seen);
        m = m_new;
        workgroupBarrier(); // red's maxima read, Ps written
        red[lid] = vec2<f32>(ps, 0.0);
        for (var f = sg; f < FO; f = f + NSG) {
            let fm = f / (DV / SN);
            let fc = f % (DV / SN);
            var acc = fr_zero();
            for (var kk = 0u; kk < BKV; kk = kk + SK) { acc = fr_pv(acc, fm * SM * LDP + kk, kk * LDV + fc * SN); }
            fr_store(acc, fm * SM * LDS + fc * SN, LDS);
        }
        workgroupBarrier();
        var bs = 0.0;
        for (var i = 0u; i < TPR; i++) { bs = bs + red[row * TPR + i].x; }
        l = l * corr + bs;
        for (var u = 0u; u < OPT; u++) {
            let c = part + u * TPR;
            if (c < DV) { o[u] = o[u] * corr + Ss[row * LDS + c]; }
        }
        workgroupBarrier(); // Ss, Ks, Vs and red are rewritten by the next block
    }
    if (row < nrows) {
        let ob = p.off_m + b * p.sm.x + h * p.sm.y + qi * p.sm.z; // out's layout (attention.c)
        for (var u = 0u; u < OPT; u++) {
            let c = part + u * TPR;
            if (c < DV) { out[ob + c * p.sm.w] = select(select(0.0, o[u] / l, l > 0.0), nan_f(), bad); }
        }
    }
}
