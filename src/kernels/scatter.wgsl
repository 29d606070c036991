// Scatter family (scatter set/add/mul/amax/amin, scatter_add, index_add, index_put) into a copy of
// self, in up to three passes over the N update elements:
//   dest:   dest[i] = the output element update i goes to (0xffffffff when an index is out of
//           range: the update is skipped and the error flag set). index_put runs it once per
//           index tensor, accumulating.
//   winner: (set only) win[d] = max(i + 1) over updates to d: the last update in index order,
//           so "last write wins" holds whatever order the invocations run in.
//   apply:  set: the winner writes its bits (i64: set only, both words); other modes combine with a compare-exchange loop on
//           the 32-bit word holding the element (f16/bf16/8-bit elements share words).
// The prelude (src/ops/index.c) supplies lib_index.wgsl, `alias CT`, `const ESIZE: u32`,
// `const MASK: u32` (the element's bits), dec(bits) -> CT, enc(CT) -> bits, nan_ct(CT) -> bool,
// and ld_idx / idx_ok for the index binding `ib`.

struct Params {
    n: u32,          // update elements
    mode: u32,       // wgt_scatter_mode
    off_s: u32,      // element offsets of src and index within their bindings
    off_i: u32,
    acc: u32,        // dest: add to the previous pass's dest
    isize: u32,      // dest: the indexed dim's size (0: no index this pass)
    istride: u32,    // dest: the output stride the index multiplies
    alpha: f32,      // index_add's alpha (floats)
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

fn index_of(wid: vec3<u32>, groups: vec3<u32>, lid: u32) -> u32 { return (wid.x + wid.y * groups.x) * 256u + lid; }

@compute @workgroup_size(256)
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

@compute @workgroup_size(256)
fn winner_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wid, groups, lid);
    if (i >= p.n) { return; }
    let d = dest[i];
    if (d != INVALID) { atomicMax(&win[d], i + 1u); }
}

fn src_bits(i: u32) -> u32 {
    if (ESIZE == 4u) { return src[i]; }
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

@compute @workgroup_size(256)
fn apply_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let i = index_of(wid, groups, lid);
    if (i >= p.n) { return; }
    let d = dest[i];
    if (d == INVALID) { return; }
    let is_set = p.mode == 0u;
    if (is_set && atomicLoad(&win[d]) != i + 1u) { return; }
    if (ESIZE == 8u) { // i64, set only: the winner owns both words
        let at = layout_index(p.ls, i) + p.off_s;
        atomicStore(&out[2u * d], src[2u * at]);
        atomicStore(&out[2u * d + 1u], src[2u * at + 1u]);
        return;
    }
    let bits = src_bits(layout_index(p.ls, i) + p.off_s);
    var v = dec(bits);
    v = v * CT(p.alpha); // index_add's alpha (1 otherwise, and always 1 for integers)
    let per = 4u / ESIZE;
    let w = d / per;
    let shift = (d % per) * ESIZE * 8u;
    if (ESIZE == 4u && is_set) {
        atomicStore(&out[w], bits);
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
