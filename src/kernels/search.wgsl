// searchsorted / bucketize (search_main) and histc (range_main, hist_main).
//
// search_main: output element e (contiguous over values' shape) is the insertion index of value e
// in row e / p.inner of the sequence (row 0 when the sequence is 1-D), by PyTorch's binary search:
// go left while seq[mid] >= v (right: seq[mid] > v); a NaN value never goes left. With a sorter
// the sequence is read at sorter[mid] (an index out of [0, m) is clamped: the op documents it).
// range_main:  the smallest and largest non-NaN x as ordered keys, atomically into rng[0], rng[1].
// hist_main:   counts of x into p.bins bins over [lo, hi], u32 atomics into hist.
//
// The prelude (src/ops/search.c) supplies lib_index.wgsl (and lib_i64.wgsl where an input is i64),
// `const WG` (the workgroup size), `alias CT` (vec2<u32> for i64), `fn ldq(i: u32) -> CT`
// (sequence), `fn ldv(i: u32) -> CT` (values or x), `fn lds(i: u32)` (sorter), lib_ct.wgsl's
// section for CT (ct_ge, ct_gt: a >= b, a > b, false when either is NaN; ct_f32),
// lib_search_ops.wgsl's `fn sorter_at(i: u32) -> u32` (sorter element i clamped to [0, p.m - 1])
// and `fn sti(w: u32, v: array<i32, 4>)` (output indices).

struct Params {
    n: u32,
    m: u32,
    inner: u32,
    right: u32,
    has_sorter: u32,
    multi: u32,   // the sequence has rows
    off_s: u32,
    step_s: u32,
    off_v: u32,
    off_t: u32,
    step_t: u32,
    bins: u32,
    auto_range: u32,
    lo: f32,
    hi: f32,
    off_o: u32,   // element offset of the output in its binding
    vl: Layout,  // values (or x)
    sl: Layout,  // the sequence's rows
    tl: Layout,  // the sorter's rows
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> sq: array<u32>;
@group(0) @binding(2) var<storage, read> vs: array<u32>;
@group(0) @binding(3) var<storage, read> so: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
@group(0) @binding(5) var<storage, read_write> hist: array<atomic<u32>>;
@group(0) @binding(6) var<storage, read_write> rng: array<atomic<u32>>;

fn flat_id(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 { return (wid.x + wid.y * nwg.x) * WG + lid; }

@compute @workgroup_size(WG)
fn search_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let e = flat_id(wid, nwg, lid);
    if (e >= p.n) { return; }
    let v = ldv(layout_index(p.vl, e) + p.off_v);
    let row = select(0u, e / p.inner, p.multi != 0u);
    let sb = layout_index(p.sl, row) + p.off_s;
    let tb = layout_index(p.tl, row) + p.off_t;
    var lo = 0u;
    var hi = p.m;
    while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        var j = mid;
        if (p.has_sorter != 0u) { j = sorter_at(tb + mid * p.step_t); }
        let s = ldq(sb + j * p.step_s);
        let left = select(ct_ge(s, v), ct_gt(s, v), p.right != 0u);
        if (left) { hi = mid; } else { lo = mid + 1u; }
    }
    var r: array<i32, 4>;
    r[0] = i32(lo);
    sti(e + p.off_o, r);
}

fn key_of(v: f32) -> u32 {
    let b = bitcast<u32>(v);
    return select(b ^ 0x80000000u, ~b, (b >> 31u) != 0u);
}

fn key_val(k: u32) -> f32 { return bitcast<f32>(select(~k, k ^ 0x80000000u, (k >> 31u) != 0u)); }

fn is_nan_f(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

var<workgroup> wmin: atomic<u32>;
var<workgroup> wmax: atomic<u32>;

@compute @workgroup_size(WG)
fn range_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    if (lid == 0u) {
        atomicStore(&wmin, 0xffffffffu);
        atomicStore(&wmax, 0u);
    }
    workgroupBarrier();
    let e = flat_id(wid, nwg, lid);
    if (e < p.n) {
        let v = ct_f32(ldv(layout_index(p.vl, e) + p.off_v));
        if (!is_nan_f(v)) {
            atomicMin(&wmin, key_of(v));
            atomicMax(&wmax, key_of(v));
        }
    }
    workgroupBarrier();
    if (lid == 0u) {
        let a = atomicLoad(&wmin);
        let b = atomicLoad(&wmax);
        if (a <= b) {
            atomicMin(&rng[0], a);
            atomicMax(&rng[1], b);
        }
    }
}

@compute @workgroup_size(WG)
fn hist_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let e = flat_id(wid, nwg, lid);
    if (e >= p.n) { return; }
    var lo = p.lo;
    var hi = p.hi;
    if (p.auto_range != 0u) {
        let a = atomicLoad(&rng[0]);
        let b = atomicLoad(&rng[1]);
        if (a <= b) {
            lo = key_val(a);
            hi = key_val(b);
        }
        if (lo == hi) {
            lo = lo - 1.0;
            hi = hi + 1.0;
        }
    }
    let v = ct_f32(ldv(layout_index(p.vl, e) + p.off_v));
    if (!(v >= lo && v <= hi)) { return; }
    let fb = f32(p.bins);
    let q = ((v - lo) * fb) / (hi - lo);
    let b = select(p.bins - 1u, u32(q), q < fb);
    atomicAdd(&hist[b], 1u);
}
