// Scaled dot-product attention, flash style: one workgroup of 64 invocations per 4 query rows of
// one kv head (queries of one head, or heads of one GQA group) and key split; keys are visited in
// blocks of 64 with an online softmax (running max m and sum l per row), the block's
// probabilities shared through workgroup memory, so the [Lq, Lk] scores never exist and each key
// and value row is read once per 4 query rows.
//  - main: with p.nsplit == 1 writes out[row, :]; with several splits (decode: few query rows, a
//    long cache) writes each split's (m, l, acc[Dv]) to part, and `combine` merges them.
// GQA/MQA: query head h reads kv head h / p.group. k and v are strided views (a KV cache read in
// place). Causal: key j is visible to query i when j <= coff + i; with WINDOW (a prelude
// constant, false for full attention) also when j > coff + i - p.pad2 (the window). Masks: float
// (added) or bool (keep where set). A row that sees no key gives zeros. D and Dv are at most 256.
// The prelude (src/ops/attention.c) supplies lib_attention.wgsl's params, nan (is_nan, neg_inf,
// nan_f) and ldk4 sections (ldk4: four consecutive elements of k from an even element index, as f32),
// the loaders ldq, ldk, ldv, ldm (all f32), WINDOW and LOADS4 (true: k and v loads issued two and
// four at a time; src/ops/attention.c's sdpa_loads4 says when).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<u32>;
@group(0) @binding(2) var<storage, read> k: array<u32>;
@group(0) @binding(3) var<storage, read> v: array<u32>;
@group(0) @binding(4) var<storage, read> mask: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;

const BLK: u32 = 64u;
const QR: u32 = 4u; // query rows per workgroup: each key and value row read once serves all four

var<workgroup> qs: array<vec4<f32>, 256>; // qs[d] = the four rows' q[d] * scale
var<workgroup> ps: array<vec4<f32>, 64>;  // the block's probabilities, per key, for the four rows
var<workgroup> red: array<vec4<f32>, 64>;
var<workgroup> red2: array<vec4<f32>, 64>;

fn is_nan4(x: vec4<f32>) -> vec4<bool> { return (bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u); }
// max that keeps NaN (the reference's max does)
fn nmax4(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> { return select(max(a, b), a + b, is_nan4(a) | is_nan4(b)); }

fn block_max4(x: vec4<f32>, lid: u32) -> vec4<f32> {
    red[lid] = x;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s / 2u) {
        if (lid < s) { red[lid] = nmax4(red[lid], red[lid + s]); }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

// Sums of the probabilities and of a count of NaN scores, per row. NaN is tracked explicitly
// because some compilers fold comparisons as if NaN could not occur.
fn block_sum2(x: vec4<f32>, y: vec4<f32>, lid: u32) -> array<vec4<f32>, 2> {
    red[lid] = x;
    red2[lid] = y;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s / 2u) {
        if (lid < s) {
            red[lid] = red[lid] + red[lid + s];
            red2[lid] = red2[lid] + red2[lid + s];
        }
        workgroupBarrier();
    }
    let r = array<vec4<f32>, 2>(red[0], red2[0]);
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    // The rows of one kv head are its group's (query head, query) pairs, the query fastest; a
    // workgroup takes QR consecutive ones: four queries of a head in prefill, four heads of a
    // GQA group in decode. Either way each key and value row read serves all four.
    let t = wid.x + wid.y * nwg.x; // (b, kv head, block of QR rows) row-major
    let split = wid.z;
    let hkv = p.Hq / p.group;
    let per_kv = p.group * p.Lq;
    let nqb = (per_kv + QR - 1u) / QR;
    let r0 = (t % nqb) * QR;
    let hk = (t / nqb) % hkv;
    let b = t / (nqb * hkv);
    let valid = b < p.B; // uniform across the workgroup
    let nrows = select(0u, min(QR, per_kv - r0), valid);
    var qrow: array<u32, 4>;  // q element offset of each row
    var mrow: array<u32, 4>;  // mask element offset
    var orow: array<u32, 4>;  // output row
    var limit = vec4<i32>(0); // causal: the last key each row sees
    var last = -2147483647i;
    var first = 2147483647i;  // WINDOW: the first key any row sees
    for (var r = 0u; r < QR; r++) {
        let rr = min(r0 + r, per_kv - 1u);
        let h = hk * p.group + rr / p.Lq;
        let i = rr % p.Lq;
        qrow[r] = p.off_q + b * p.sq.x + h * p.sq.y + i * p.sq.z;
        mrow[r] = p.off_m + b * p.sm.x + h * p.sm.y + i * p.sm.z;
        orow[r] = (b * p.Hq + h) * p.Lq + i;
        limit[r] = p.coff + i32(i);
        if (r < nrows) { last = max(last, limit[r]); }
        if (WINDOW && r < nrows) { first = min(first, limit[r] - i32(p.pad2) + 1); }
    }
    for (var d = lid; d < p.D; d = d + 64u) {
        var qv = vec4<f32>(0.0);
        for (var r = 0u; r < QR; r++) {
            if (r < nrows) { qv[r] = ldq(qrow[r] + d * p.sq.w) * p.scale; }
        }
        qs[d] = qv;
    }
    workgroupBarrier();
    let kb = p.off_k + b * p.sk.x + hk * p.sk.y;
    let vb = p.off_v + b * p.sv.x + hk * p.sv.y;
    var j0 = split * p.per_split;
    var j1 = min(j0 + p.per_split, p.Lk);
    if (WINDOW && nrows > 0u) { j0 = max(j0, u32(clamp(first, 0, i32(j1)))); }
    if (p.causal != 0u && nrows > 0u) { j1 = u32(clamp(last + 1, 0, i32(j1))); }
    if (nrows == 0u) { j1 = j0; } // past the last row (the grid is rounded up)
    let ninf = vec4<f32>(neg_inf());
    var m = ninf;
    var l = vec4<f32>(0.0);
    var acc = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    var nan_seen = vec4<bool>(false);
    for (var jb = j0; jb < j1; jb = jb + BLK) {
        let j = jb + lid;
        var s = ninf;
        if (j < j1) {
            var dot = vec4<f32>(0.0);
            let kr = kb + j * p.sk.z;
            if (p.kvec != 0u) { // k rows contiguous: four elements per load call (LOADS4: two in flight)
                var d = 0u;
                for (; LOADS4 && d + 4u < p.D; d = d + 8u) {
                    let kv = ldk4(kr + d);
                    let kw = ldk4(kr + d + 4u);
                    dot = fma(qs[d], vec4<f32>(kv.x), dot);
                    dot = fma(qs[d + 1u], vec4<f32>(kv.y), dot);
                    dot = fma(qs[d + 2u], vec4<f32>(kv.z), dot);
                    dot = fma(qs[d + 3u], vec4<f32>(kv.w), dot);
                    dot = fma(qs[d + 4u], vec4<f32>(kw.x), dot);
                    dot = fma(qs[d + 5u], vec4<f32>(kw.y), dot);
                    dot = fma(qs[d + 6u], vec4<f32>(kw.z), dot);
                    dot = fma(qs[d + 7u], vec4<f32>(kw.w), dot);
                }
                for (; d < p.D; d = d + 4u) {
                    let kv = ldk4(kr + d);
                    dot = fma(qs[d], vec4<f32>(kv.x), dot);
                    dot = fma(qs[d + 1u], vec4<f32>(kv.y), dot);
                    dot = fma(qs[d + 2u], vec4<f32>(kv.z), dot);
                    dot = fma(qs[d + 3u], vec4<f32>(kv.w), dot);
                }
            } else {
                for (var d = 0u; d < p.D; d++) { dot = fma(qs[d], vec4<f32>(ldk(kr + d * p.sk.w)), dot); }
            }
            for (var r = 0u; r < QR; r++) {
                var keep = r < nrows && (p.causal == 0u || i32(j) <= limit[r]);
                if (WINDOW) { keep = keep && i32(j) > limit[r] - i32(p.pad2); }
                var sr = dot[r];
                if (p.mask_kind == 1u) { sr = sr + ldm(mrow[r] + j * p.sm.w); }
                if (p.mask_kind == 2u) { keep = keep && ldm(mrow[r] + j * p.sm.w) != 0.0; }
                if (keep) { s[r] = sr; }
            }
        }
        let m_new = nmax4(m, block_max4(s, lid));
        // rows that have seen only masked keys so far keep m = -inf and add nothing
        let seen = m_new != ninf;
        let pj = select(vec4<f32>(0.0), exp(s - m_new), seen);
        ps[lid] = pj;
        let corr = select(vec4<f32>(1.0), exp(m - m_new), seen);
        // a NaN or +inf score makes the row NaN (PyTorch: exp(s - max) is NaN there)
        let bad = is_nan4(s) | (bitcast<vec4<u32>>(s) == vec4<u32>(0x7f800000u));
        let sums = block_sum2(pj, select(vec4<f32>(0.0), vec4<f32>(1.0), bad), lid); // also publishes ps
        nan_seen = nan_seen | (sums[1] > vec4<f32>(0.0));
        l = l * corr + sums[0];
        let n = min(BLK, j1 - jb);
        for (var r = 0u; r < 4u; r++) {
            let d = lid + r * 64u;
            if (d < p.Dv) {
                var a = acc[r] * corr;
                let vr = vb + jb * p.sv.z + d * p.sv.w;
                var jj = 0u;
                for (; LOADS4 && jj + 3u < n; jj += 4u) { // four loads in flight
                    let v0 = ldv(vr + jj * p.sv.z);
                    let v1 = ldv(vr + (jj + 1u) * p.sv.z);
                    let v2 = ldv(vr + (jj + 2u) * p.sv.z);
                    let v3 = ldv(vr + (jj + 3u) * p.sv.z);
                    a = fma(ps[jj], vec4<f32>(v0), a);
                    a = fma(ps[jj + 1u], vec4<f32>(v1), a);
                    a = fma(ps[jj + 2u], vec4<f32>(v2), a);
                    a = fma(ps[jj + 3u], vec4<f32>(v3), a);
                }
                for (; jj < n; jj++) { a = fma(ps[jj], vec4<f32>(ldv(vr + jj * p.sv.z)), a); }
                acc[r] = a;
            }
        }
        m = m_new;
        workgroupBarrier(); // ps is rewritten by the next block
    }
    for (var q = 0u; q < nrows; q++) {
        if (p.nsplit == 1u) {
            for (var r = 0u; r < 4u; r++) {
                let d = lid + r * 64u;
                if (d < p.Dv) {
                    out[orow[q] * p.Dv + d] = select(select(0.0, acc[r][q] / l[q], l[q] > 0.0), nan_f(), nan_seen[q]);
                }
            }
        } else {
            let pb = (orow[q] * p.nsplit + split) * (p.Dv + 2u);
            if (lid == 0u) { part[pb] = m[q]; part[pb + 1u] = select(l[q], nan_f(), nan_seen[q]); }
            for (var r = 0u; r < 4u; r++) {
                let d = lid + r * 64u;
                if (d < p.Dv) { part[pb + 2u + d] = acc[r][q]; }
            }
        }
    }
}

// Merge the splits of one row: out = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M).
@compute @workgroup_size(64)
fn combine(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= p.B * p.Hq * p.Lq) { return; }
    let stride = p.Dv + 2u;
    let pb = row * p.nsplit * stride;
    var big = neg_inf();
    for (var s = 0u; s < p.nsplit; s++) { big = nmax4(vec4<f32>(big), vec4<f32>(part[pb + s * stride])).x; }
    var l = 0.0;
    var nan_seen = false;
    for (var s = 0u; s < p.nsplit; s++) {
        let ms = part[pb + s * stride];
        let ls = part[pb + s * stride + 1u];
        nan_seen = nan_seen || is_nan(ls);
        if (ms != neg_inf()) { l = l + ls * exp(ms - big); }
    }
    for (var d = lid; d < p.Dv; d = d + 64u) {
        var a = 0.0;
        for (var s = 0u; s < p.nsplit; s++) {
            let ms = part[pb + s * stride];
            if (ms != neg_inf()) { a = a + part[pb + s * stride + 2u + d] * exp(ms - big); }
        }
        out[row * p.Dv + d] = select(select(0.0, a / l, l > 0.0), nan_f(), nan_seen);
    }
}
