// Scatter family (scatter set/add/mul/amax/amin, scatter_add, index_add, index_put) into a copy of
// self. First, per update element i of N:
//   dest:   dest[i] = the output element update i goes to (0xffffffff when an index is out of
//           range: the update is skipped and the error flag set). index_put runs it once per
//           index tensor, accumulating.
// Then one of two ways to combine:
//  - atomics on words (f32/f16/bf16, and 32-bit and smaller integers with alpha 1):
//   winner: (set only) win[d] = max(i + 1) over updates to d: the last update in index order,
//           so "last write wins" holds whatever order the invocations run in.
//   apply:  set: the winner writes its bits (i64: both words); i32/u32 add: atomicAdd; i64 add:
//           atomicAdd on the low word, and on the high word with the carry the low word's old
//           value shows; other modes combine with a compare-exchange loop on the 32-bit word
//           holding the element (f16/bf16/8-bit elements share words).
//  - i64 amax/amin: two rounds of 32-bit atomicMax/atomicMin, the high words then the low
//    words of the updates that hold the extreme high word (ext_*_main, below).
//  - lists per destination, exact in 64 bits (i64 mul; integer index_add with
//    alpha != 1, which the reference computes in double and saturates step by step, so order
//    matters; for i64 the walk rounds as those doubles do). WGSL's atomics are 32-bit and a pair
//    of words cannot be updated as one, so each destination gets a single owner instead:
//   link:   head[d] <- i + 1 (atomicExchange), next[i] = the previous head: a list of the updates
//           to d (head is `win`, next lives in dest[N + i]).
//   walk:   one invocation per output element: with p.ordered, sorts its list into index
//           order (merge sort on the links), then folds the updates into the element in 64-bit
//           arithmetic and stores it once. A destination with k updates costs its owner k serial
//           steps (k log k when sorted).
// The prelude (src/ops/index.c) supplies lib_index.wgsl, lib_i64.wgsl, `const WG: u32`,
// `alias CT`, `const ESIZE: u32`, `const MASK: u32` (the element's bits), and from
// lib_index_ops.wgsl the dtype's codec dec(bits) -> CT, enc(CT) -> bits, nan_ct(CT) -> bool,
// to64(CT) -> vec2<u32>, sat_bits(vec2<u32>) -> u32 (a 64-bit value saturated into the dtype, as
// the reference's double store), and ld_idx / idx_ok for the index binding `ib`.

struct Params {
    n: u32,          // update elements
    mode: u32,       // wgt_scatter_mode
    off_s: u32,      // element offsets of src and index within their bindings
    off_i: u32,
    acc: u32,        // dest: add to the previous pass's dest
    isize: u32,      // dest: the indexed dim's size (0: no index this pass)
    istride: u32,    // dest: the output stride the index multiplies
    alpha: f32,      // index_add's alpha (floats)
    n_out: u32,      // walk: output elements
    alpha_i: i32,    // walk: index_add's alpha (integers, |alpha| <= 2^20)
    ordered: u32,    // walk: fold in index order, saturating (integer alpha != 1)
    pad: u32,
    cstride: array<vec4<u32>, 2>, // dest: output stride of each iteration coordinate
    ls: Layout,      // src by iteration coordinates (its shape is the iteration shape)
    li: Layout,      // index by iteration coordinates
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> ib: array<u32>;
@group(0) @binding(3) var<storage, read_write> dest: array<u32>;
@group(0) @binding(4) var<storage, read_write> win: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read_write> out: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> err: array<atomic<u32>>;

const INVALID: u32 = 0xffffffffu;

fn index_of(wid: vec3<u32>, groups: vec3<u32>, lid: u32) -> u32 { return (wid.x + wid.y * groups.x) * WG + lid; }

@compute @workgroup_size(WG)
fn dest_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wid, groups, lid);
    if (i >= p.n) { return; }
    var d = 0u;
    var bad = false;
    if (p.acc != 0u) { d = dest[i]; bad = d == INVALID; }
    var rem = i;
    for (var k = 7u; k < 8u; k = k - 1u) {
        let n = p.ls.shape[k >> 2u][k & 3u];
        d = d + (rem % n) * p.cstride[k >> 2u][k & 3u];
        rem = rem / n;
    }
    if (p.isize > 0u) {
        let at = layout_index(p.li, i) + p.off_i;
        var v = ld_idx(at);
        if (v < 0) { v = v + i32(p.isize); }
        if (!idx_ok(at) || v < 0 || v >= i32(p.isize)) {
            bad = true;
            atomicOr(&err[0], 2u);
        } else {
            d = d + u32(v) * p.istride;
        }
    }
    dest[i] = select(d, INVALID, bad);
}

@compute @workgroup_size(WG)
fn winner_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wid, groups, lid);
    if (i >= p.n) { return; }
    let d = dest[i];
    if (d != INVALID) { atomicMax(&win[d], i + 1u); }
}

fn src_bits(i: u32) -> u32 {
    if (ESIZE >= 4u) { return src[i * (ESIZE / 4u)]; } // i64: its low word
    if (ESIZE == 2u) { return (src[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu; }
    return (src[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
}

fn combine(a: CT, b: CT) -> CT {
    switch p.mode {
        case 1u: { return a + b; }
        case 2u: { return a * b; }
        case 3u: { if (nan_ct(a) || nan_ct(b)) { return a + b; } return max(a, b); }
        default: { if (nan_ct(a) || nan_ct(b)) { return a + b; } return min(a, b); }
    }
}

@compute @workgroup_size(WG)
fn apply_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wid, groups, lid);
    if (i >= p.n) { return; }
    let d = dest[i];
    if (d == INVALID) { return; }
    let is_set = p.mode == 0u;
    if (is_set && atomicLoad(&win[d]) != i + 1u) { return; }
    if (ESIZE == 8u) { // i64 set or add (amax/amin: ext_*_main; mul walks lists)
        let at = layout_index(p.ls, i) + p.off_s;
        let v = vec2<u32>(src[2u * at], src[2u * at + 1u]);
        if (is_set) { // the winner owns both words
            atomicStore(&out[2u * d], v.x);
            atomicStore(&out[2u * d + 1u], v.y);
            return;
        }
        // Add: each atomicAdd on the low word sees a distinct old value, so the carries counted
        // from them total exactly the wraps of the low word's sum; the high word gets them with
        // its own atomicAdd. The pair is inconsistent mid-kernel, exact when every update is in.
        let old = atomicAdd(&out[2u * d], v.x);
        atomicAdd(&out[2u * d + 1u], v.y + select(0u, 1u, old + v.x < old));
        return;
    }
    let bits = src_bits(layout_index(p.ls, i) + p.off_s);
    var v = dec(bits);
    v = v * CT(p.alpha); // index_add's alpha (1 otherwise, and always 1 here for integers)
    let per = 4u / ESIZE;
    let w = d / per;
    let shift = (d % per) * ESIZE * 8u;
    if (ESIZE == 4u && is_set) {
        atomicStore(&out[w], bits);
        return;
    }
    if (ESIZE == 4u && !IS_FLOAT && p.mode == 1u) { // wrapping 32-bit add: any order gives the same word
        atomicAdd(&out[w], bits);
        return;
    }
    var old = atomicLoad(&out[w]);
    loop {
        var nb = bits;
        if (!is_set) { nb = enc(combine(dec((old >> shift) & MASK), v)) & MASK; }
        let nw = (old & ~(MASK << shift)) | (nb << shift);
        let r = atomicCompareExchangeWeak(&out[w], old, nw);
        if (r.exchanged) { break; }
        old = r.old_value;
    }
}

// ---- i64 amax/amin in two rounds of 32-bit atomics ----------------------------------------------
// The extreme of (signed high word, unsigned low word) pairs: first the extreme high word over the
// element and its updates, hk[d] = win[d] (keys: the high word with its sign bit flipped, so
// unsigned order is signed order), then the extreme low word among those holding that high word,
// lo[d] = win[n_out + d]. Exact, and parallel however many updates share a destination.

fn hkey(hi: u32) -> u32 { return hi ^ 0x80000000u; }
fn is_max() -> bool { return p.mode == 3u; }
fn upd_words(i: u32) -> vec2<u32> {
    let at = layout_index(p.ls, i) + p.off_s;
    return vec2<u32>(src[2u * at], src[2u * at + 1u]);
}

@compute @workgroup_size(WG)
fn ext_init_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                 @builtin(local_invocation_index) lid: u32) {
    let d = index_of(wid, groups, lid);
    if (d >= p.n_out) { return; }
    atomicStore(&win[d], hkey(atomicLoad(&out[2u * d + 1u])));
    atomicStore(&win[p.n_out + d], select(0xffffffffu, 0u, is_max()));
}

@compute @workgroup_size(WG)
fn ext_hi_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wid, groups, lid);
    if (i >= p.n) { return; }
    let d = dest[i];
    if (d == INVALID) { return; }
    let k = hkey(upd_words(i).y);
    if (is_max()) { atomicMax(&win[d], k); } else { atomicMin(&win[d], k); }
}

@compute @workgroup_size(WG)
fn ext_lo_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wid, groups, lid);
    if (i >= p.n) { return; }
    let d = dest[i];
    if (d == INVALID) { return; }
    let v = upd_words(i);
    if (hkey(v.y) != atomicLoad(&win[d])) { return; }
    if (is_max()) { atomicMax(&win[p.n_out + d], v.x); } else { atomicMin(&win[p.n_out + d], v.x); }
}

@compute @workgroup_size(WG)
fn ext_fin_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let d = index_of(wid, groups, lid);
    if (d >= p.n_out) { return; }
    let k = atomicLoad(&win[d]);
    var lo = atomicLoad(&win[p.n_out + d]);
    let own = vec2<u32>(atomicLoad(&out[2u * d]), atomicLoad(&out[2u * d + 1u]));
    if (hkey(own.y) == k) { lo = select(min(lo, own.x), max(lo, own.x), is_max()); }
    atomicStore(&out[2u * d], lo);
    atomicStore(&out[2u * d + 1u], hkey(k));
}

// ---- lists per destination --------------------------------------------------------------------

fn next_of(x: u32) -> u32 { return dest[p.n + x - 1u]; } // x: update index + 1
fn set_next(x: u32, y: u32) { dest[p.n + x - 1u] = y; }

@compute @workgroup_size(WG)
fn link_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wid, groups, lid);
    if (i >= p.n) { return; }
    let d = dest[i];
    if (d != INVALID) { dest[p.n + i] = atomicExchange(&win[d], i + 1u); }
}

// Update x's value (x: index + 1) in 64 bits.
fn update64(x: u32) -> vec2<u32> {
    let at = layout_index(p.ls, x - 1u) + p.off_s;
    if (ESIZE == 8u) { return vec2<u32>(src[2u * at], src[2u * at + 1u]); }
    return to64(dec(src_bits(at)));
}

// ---- i64 index_add with alpha != 1 as the reference's doubles compute it: a + alpha * b with a
// and b converted to double, the product and the sum rounded to 53 significant bits (to nearest,
// ties to even), the result saturated into i64. Every value is an integer below 2^85 in magnitude
// (|alpha| <= 2^20), so 96-bit two's complement words (x low) hold them exactly.

fn w_from_i64(a: vec2<u32>) -> vec3<u32> { return vec3<u32>(a, select(0u, 0xffffffffu, i64_is_neg(a))); }
fn w_is_neg(a: vec3<u32>) -> bool { return (a.z >> 31u) != 0u; }
fn w_add(a: vec3<u32>, b: vec3<u32>) -> vec3<u32> {
    let x = a.x + b.x;
    let y0 = a.y + b.y;
    let y = y0 + select(0u, 1u, x < a.x);
    return vec3<u32>(x, y, a.z + b.z + select(0u, 1u, y0 < a.y) + select(0u, 1u, y < y0));
}
fn w_neg(a: vec3<u32>) -> vec3<u32> { return w_add(~a, vec3<u32>(1u, 0u, 0u)); }
fn w_lt(a: vec3<u32>, b: vec3<u32>) -> bool { // unsigned
    if (a.z != b.z) { return a.z < b.z; }
    if (a.y != b.y) { return a.y < b.y; }
    return a.x < b.x;
}
fn w_shl(a: vec3<u32>, n: u32) -> vec3<u32> { // n in [0, 95]
    var r = a;
    var k = n;
    for (; k >= 32u; k = k - 32u) { r = vec3<u32>(0u, r.x, r.y); }
    if (k == 0u) { return r; }
    return vec3<u32>(r.x << k, (r.y << k) | (r.x >> (32u - k)), (r.z << k) | (r.y >> (32u - k)));
}
fn w_shr(a: vec3<u32>, n: u32) -> vec3<u32> { // logical, n in [0, 95]
    var r = a;
    var k = n;
    for (; k >= 32u; k = k - 32u) { r = vec3<u32>(r.y, r.z, 0u); }
    if (k == 0u) { return r; }
    return vec3<u32>((r.x >> k) | (r.y << (32u - k)), (r.y >> k) | (r.z << (32u - k)), r.z >> k);
}
fn w_rnd53(a: vec3<u32>) -> vec3<u32> {
    let neg = w_is_neg(a);
    let m = select(a, w_neg(a), neg);
    var e = 31u - countLeadingZeros(m.x); // the top bit (m = 0 gives a wrapped e, below)
    if (m.y != 0u) { e = 63u - countLeadingZeros(m.y); }
    if (m.z != 0u) { e = 95u - countLeadingZeros(m.z); }
    if ((m.y | m.z) == 0u || e <= 52u) { return a; }
    let sh = e - 52u;
    var keep = w_shr(m, sh);
    let rest = w_add(m, w_neg(w_shl(keep, sh)));
    let half = w_shl(vec3<u32>(1u, 0u, 0u), sh - 1u);
    if (w_lt(half, rest) || (all(rest == half) && (keep.x & 1u) == 1u)) { keep = w_add(keep, vec3<u32>(1u, 0u, 0u)); }
    let r = w_shl(keep, sh);
    return select(r, w_neg(r), neg);
}
fn i64_alpha_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let bm = w_rnd53(w_from_i64(b));
    let neg_b = w_is_neg(bm);
    let m = select(bm, w_neg(bm), neg_b); // < 2^64
    let al = u32(abs(p.alpha_i));
    let lo = u32_mul_wide(al, m.x);
    let hi = u32_mul_wide(al, m.y);
    let y = lo.y + hi.x;
    var prod = vec3<u32>(lo.x, y, hi.y + select(0u, 1u, y < lo.y));
    if (neg_b != (p.alpha_i < 0)) { prod = w_neg(prod); }
    let r = w_rnd53(w_add(w_rnd53(w_from_i64(a)), w_rnd53(prod)));
    if (!w_is_neg(r) && (r.z != 0u || r.y >= 0x80000000u)) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
    if (w_is_neg(r) && (r.z != 0xffffffffu || r.y < 0x80000000u)) { return vec2<u32>(0u, 0x80000000u); }
    return r.xy;
}

fn fold64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    switch p.mode {
        case 1u: {
            if (p.ordered != 0u && ESIZE == 8u) { return i64_alpha_add(a, b); }
            if (p.ordered != 0u) { return i64_add(a, i64_mul(i64_from_i32(p.alpha_i), b)); }
            return i64_add(a, b);
        }
        case 2u: { return i64_mul(a, b); }
        case 3u: { return i64_max(a, b); }
        default: { return i64_min(a, b); }
    }
}

// The list from `first` in ascending order: bottom-up merge sort on the links (runs of 1, 2, 4,
// ... merged pairwise in place), k log k steps whatever order the exchanges left.
fn sort_list(first: u32) -> u32 {
    var list = first;
    var run = 1u;
    loop {
        var a = list;
        list = 0u;
        var tail = 0u;
        var merges = 0u;
        loop {
            if (a == 0u) { break; }
            merges = merges + 1u;
            var b = a; // a: a run of up to `run` nodes; b: the run after it
            var na = 0u;
            for (; na < run && b != 0u; na = na + 1u) { b = next_of(b); }
            var nb = run;
            loop {
                var e = 0u;
                if (na > 0u && (nb == 0u || b == 0u || a < b)) {
                    e = a;
                    a = next_of(a);
                    na = na - 1u;
                } else if (nb > 0u && b != 0u) {
                    e = b;
                    b = next_of(b);
                    nb = nb - 1u;
                } else {
                    break;
                }
                if (tail == 0u) { list = e; } else { set_next(tail, e); }
                tail = e;
            }
            a = b;
        }
        set_next(tail, 0u);
        if (merges <= 1u) { return list; }
        run = run * 2u;
    }
}

@compute @workgroup_size(WG)
fn walk_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let d = index_of(wid, groups, lid);
    if (d >= p.n_out) { return; }
    var first = atomicLoad(&win[d]);
    if (first == 0u) { return; }
    if (p.ordered != 0u) { first = sort_list(first); }
    let per = 4u / min(ESIZE, 4u);
    let w = d / per;
    let shift = (d % per) * ESIZE * 8u;
    var acc: vec2<u32>;
    if (ESIZE == 8u) {
        acc = vec2<u32>(atomicLoad(&out[2u * d]), atomicLoad(&out[2u * d + 1u]));
    } else {
        acc = to64(dec((atomicLoad(&out[w]) >> shift) & MASK)); // only this invocation changes these bits
    }
    var x = first;
    loop {
        if (x == 0u) { break; }
        acc = fold64(acc, update64(x));
        if (p.ordered != 0u && ESIZE < 8u) { acc = to64(dec(sat_bits(acc))); } // the reference stores every step
        x = next_of(x);
    }
    if (ESIZE == 8u) {
        atomicStore(&out[2u * d], acc.x);
        atomicStore(&out[2u * d + 1u], acc.y);
        return;
    }
    let nb = sat_bits(acc);
    if (ESIZE == 4u) {
        atomicStore(&out[w], nb);
        return;
    }
    var old = atomicLoad(&out[w]); // neighbours in the word have owners of their own
    loop {
        let nw = (old & ~(MASK << shift)) | (nb << shift);
        let r = atomicCompareExchangeWeak(&out[w], old, nw);
        if (r.exchanged) { break; }
        old = r.old_value;
    }
}
