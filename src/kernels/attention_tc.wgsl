// Scaled dot-product attention of many query rows (prefill) through subgroup matrices (the tensor
// cores): flash style, one workgroup per BQ query rows, the keys visited in blocks of BKV with an
// online softmax (running max m and sum l per row, f32). The rows are PP = BQ / HP consecutive
// positions of HP heads that share a kv head (GQA: row r is position r / HP of head r % HP), so a
// block of k and v serves HP heads, and a causal prompt's workgroups span fewer positions (less of
// each block is cut away on the diagonal; HP 1: BQ positions of one head). Per block:
//   S = Q K^T     fragments SM x SN over k steps of SK of D, Q and the block of K in workgroup
//                 memory as TT (f16 where the device has shader-f16), S stored to Ss in f32;
//   softmax       BQ rows of TPR invocations each: scale, causal cut, block max, P = exp(S - m)
//                 as TT into Ps, row sums;
//   O += P V      fragments of the block's P V stored to Ss (f32), added into each invocation's
//                 share of the rows' outputs (registers) after the rescale exp(m_old - m_new).
// K and V blocks: with KV4 (f32 rows of whole 16-byte words: a model's cache) each invocation loads
// its share of the next block as 16-byte words into registers while the current block's products
// run, and stores them as TT after the block (one load latency a block instead of a chain of
// scalar loads, converted one at a time); else element by element (kv_elem).
// The output [B, Hq, Lq, DV] at p.off_m with strides p.sm (no mask here; attention.c may store it
// token-major). GQA/MQA: head h reads kv head h / p.group (k and v are not repeated; HP divides
// p.group). Causal: key j is visible
// to query i when j <= coff + i (attention.c sends only coff >= 0: every row sees a key). NaN or
// +inf scores make their row NaN, as attention.wgsl. The heaviest query blocks (the last, under
// causal) are dispatched first.
// The fragment operations come from lib_attention.wgsl's "tc frag subgroup matrix" section (the
// tensor cores) or its "tc frag scalar" one (the same tiles in scalar code: CPU adapters, the tests).
// The prelude (src/ops/attention.c) holds BQ, BKV, HP, D, DV, WG, SGS, SM, SN, SK, LDQ, LDK, LDV, LDP,
// LDS, TT, lib_attention's params and nan sections, the fragment section, its "tc kv words" section
// (KV4 true, KW a vec4<u32> word of k and v, kw4 a word as 4 f32, the loaders ldk, ldv) or its
// "tc kv elements" one (KV4 false, KW u32) with generated loaders ldk, ldv, and the loader ldq (f32).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<u32>;
@group(0) @binding(2) var<storage, read> k: array<KW>;
@group(0) @binding(3) var<storage, read> v: array<KW>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const NSG: u32 = WG / SGS;
const TPR: u32 = WG / BQ;                // invocations per query row in the softmax
const CPT: u32 = BKV / TPR;              // scores per invocation
const OPT: u32 = (DV + TPR - 1u) / TPR;  // output features per invocation
const FS: u32 = (BQ / SM) * (BKV / SN);  // fragments of S, of P V
const FO: u32 = (BQ / SM) * (DV / SN);
const PP: u32 = BQ / HP;                 // positions a workgroup

var<workgroup> Qs: array<TT, BQ * LDQ>;
var<workgroup> Ks: array<TT, BKV * LDK>;
var<workgroup> Vs: array<TT, BKV * LDV>;
var<workgroup> Ps: array<TT, BQ * LDP>;
var<workgroup> Ss: array<f32, BQ * LDS>; // S, then the block's P V
var<workgroup> red: array<vec2<f32>, WG>; // (max, bad) partials, then (sum, bad) partials
const NK4: u32 = max(BKV * D / 4u / WG, 1u); // 16-byte words of a k block an invocation (KV4)
const NV4: u32 = max(BKV * DV / 4u / WG, 1u);
var<private> rk: array<vec4<f32>, NK4>;
var<private> rv: array<vec4<f32>, NV4>;

// KV4: the invocation's words of the block of keys and values from key j0 into rk, rv (0 past kend).
fn kv_fetch(kb: u32, vb: u32, j0: u32, kend: u32, lid: u32) {
    for (var u = 0u; u < NK4; u++) {
        let w = lid + u * WG;
        let j = j0 + w / (D / 4u);
        var x = vec4<f32>(0.0);
        if (j < kend) { x = kw4(k[(kb + j * p.sk.z) / 4u + w % (D / 4u)]); }
        rk[u] = x;
    }
    for (var u = 0u; u < NV4; u++) {
        let w = lid + u * WG;
        let j = j0 + w / (DV / 4u);
        var x = vec4<f32>(0.0);
        if (j < kend) { x = kw4(v[(vb + j * p.sv.z) / 4u + w % (DV / 4u)]); }
        rv[u] = x;
    }
}

// KV4: rk, rv into Ks, Vs.
fn kv_stash(lid: u32) {
    for (var u = 0u; u < NK4; u++) {
        let w = lid + u * WG;
        let o = (w / (D / 4u)) * LDK + (w % (D / 4u)) * 4u;
        Ks[o] = TT(rk[u].x);
        Ks[o + 1u] = TT(rk[u].y);
        Ks[o + 2u] = TT(rk[u].z);
        Ks[o + 3u] = TT(rk[u].w);
    }
    for (var u = 0u; u < NV4; u++) {
        let w = lid + u * WG;
        let o = (w / (DV / 4u)) * LDV + (w % (DV / 4u)) * 4u;
        Vs[o] = TT(rv[u].x);
        Vs[o + 1u] = TT(rv[u].y);
        Vs[o + 2u] = TT(rv[u].z);
        Vs[o + 3u] = TT(rv[u].w);
    }
}

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
    let nqb = (p.Lq + PP - 1u) / PP;
    let q0 = (nqb - 1u - t % nqb) * PP;
    let h0 = ((t / nqb) % (p.Hq / HP)) * HP; // the workgroup's first head
    let b = t / (nqb * (p.Hq / HP));
    if (b >= p.B) { return; } // the grid is rounded up; uniform across the workgroup
    let hk = h0 / p.group;
    let sg = lid / SGS;
    fr_init(lid % SGS);
    let npos = min(PP, p.Lq - q0);
    var kend = p.Lk;
    if (p.causal != 0u) { kend = min(p.Lk, u32(i32(q0 + npos) + p.coff)); }
    let qb = p.off_q + b * p.sq.x + h0 * p.sq.y;
    let kb = p.off_k + b * p.sk.x + hk * p.sk.y;
    let vb = p.off_v + b * p.sv.x + hk * p.sv.y;
    for (var e = lid; e < BQ * D; e = e + WG) {
        let r = e / D;
        let d = e % D;
        var x = 0.0;
        if (r / HP < npos) { x = ldq(qb + (r % HP) * p.sq.y + (q0 + r / HP) * p.sq.z + d * p.sq.w); }
        Qs[r * LDQ + d] = TT(x);
    }
    // this invocation's row (position qi of head h) and share of the softmax and of the outputs
    let row = lid / TPR;
    let part = lid % TPR;
    let qi = q0 + row / HP;
    let h = h0 + row % HP;
    let live = row / HP < npos; // rows past the prompt's last position (or PP * HP) take no part
    var last = i32(p.Lk) - 1; // the last key the row sees
    if (p.causal != 0u) { last = min(last, i32(qi) + p.coff); }
    let ninf = neg_inf();
    var m = ninf;
    var l = 0.0;
    var bad = false;
    var o: array<f32, OPT>;
    for (var u = 0u; u < OPT; u++) { o[u] = 0.0; }

    if (KV4) { kv_fetch(kb, vb, 0u, kend, lid); }
    for (var j0 = 0u; j0 < kend; j0 = j0 + BKV) {
        if (KV4) {
            kv_stash(lid);
        } else {
            for (var e = lid; e < BKV * D; e = e + WG) { Ks[e / D * LDK + e % D] = kv_elem(false, kb, p.sk.z, p.sk.w, D, e, j0, kend); }
            for (var e = lid; e < BKV * DV; e = e + WG) { Vs[e / DV * LDV + e % DV] = kv_elem(true, vb, p.sv.z, p.sv.w, DV, e, j0, kend); }
        }
        workgroupBarrier();
        if (KV4 && j0 + BKV < kend) { kv_fetch(kb, vb, j0 + BKV, kend, lid); } // in flight during the products
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
            if (live && i32(j0 + j) <= last) {
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
    if (live) {
        let ob = p.off_m + b * p.sm.x + h * p.sm.y + qi * p.sm.z; // out's layout (attention.c)
        for (var u = 0u; u < OPT; u++) {
            let c = part + u * TPR;
            if (c < DV) { out[ob + c * p.sm.w] = select(select(0.0, o[u] / l, l > 0.0), nan_f(), bad); }
        }
    }
}
