// Reductions (wgt_reduce_op) of a strided input over any set of dims into a contiguous output.
// The input is viewed as [kept..., reduced...] through two Layouts (the reduced dims need not be
// innermost in storage: only strides say where they are); output o reduces R elements.
//
// The prelude (src/ops/reduce.c) supplies: lib_index.wgsl, `alias CT` (the accumulation type:
// f32 for floats and float-valued ops, else i32/u32; vec2<u32> for i64 inputs, exact 64-bit words
// through lib_i64.wgsl), `alias CO` (the output's compute type; vec2<u32> for i64 inputs, which
// st converts to the output dtype as C does), `const PACK: u32` (outputs per 32-bit word),
// `const SG: u32` (fixed subgroup size, 1 without subgroups), `const WG: u32` (the workgroup size,
// a power of two the device allows), `fn ld(i: u32) -> CT`, `fn st(w: u32, v: array<CO, 4>)`,
// lib_index_out.wgsl's `fn st_idx(i: u32, v: u32)` (stores an index output, or nothing; it
// declares binding 3 when it stores) and lib_subgroup.wgsl's shuffles (for sg_reduce).
// What differs between CT = vec2<u32> and the scalar types goes through small functions that the
// prelude defines (for scalars, the plain operators): ct_add, ct_mul, ct_eq, ct_gt (a > b),
// ct_nan, ct_nz (nonzero or NaN), ct_f32, co_ct / co_f / co_u (to CO), `const VW: u32` (words of
// a CT in the stage-1 states) with ct_words / ct_of_words, shx_ct (a CT's shuffle).
//
// One entry point, two strategies (a uniform, p.col, picks one; one pipeline keeps compiles few):
//   rows:    one workgroup per PACK outputs, WG invocations stride over the R elements, then a
//             tree (subgroup shuffles, then workgroup memory). For long reductions.
//   parts:   (p.stage 1) few outputs of long reductions: workgroup w reduces part (g0 + w) % G of
//            output (g0 + w) / G and writes its raw state (VW + 4 words) to `out`; then (p.stage 2) a
//            workgroup per PACK outputs combines the G states read from `x` (bound to those
//            states). Inputs past one storage binding run stage 1 as several dispatches (g0: the
//            first part of each), each binding the storage of its parts only.
//   columns: one invocation per PACK outputs, a serial loop over R. For short reductions and for
//             reductions over outer dims, where neighbouring invocations read neighbouring words.
//             Column parts (p.col with p.stage 1): invocation t walks part t / n_out of output
//             t % n_out (consecutive invocations on consecutive outputs: coalesced loads), so a
//             column sum of few outputs still fills the device; stage 2 then runs by columns (few
//             parts) or by rows (many). The state of (output o, part c) lives at o * s_o + c * s_r
//             (s_o = G, s_r = 1 for the rows' parts; s_o = 1, s_r = n_out for stage 2 by columns).

struct Params {
    n_out: u32,       // outputs in this dispatch
    R: u32,           // elements reduced per output
    op: u32,          // wgt_reduce_op
    off: u32,         // element offset of the input within its binding
    red_simple: u32,  // 1: the reduced dims are one stride, red_stride
    red_stride: u32,
    correction: f32,  // var/std: divide by R - correction
    zero: u32,        // 0 (a runtime zero for NaN and infinity)
    out_w0: u32,      // word offset of the output within its binding
    idx_off: u32,     // element offset of the index output within its binding
    col: u32,         // 1: the column strategy
    stage: u32,       // 0: one pass; 1: partial states of G parts; 2: combine G states per output
    G: u32,           // parts per output (stages 1 and 2)
    part: u32,        // elements per part (stage 1)
    g0: u32,          // stage 1: the global part index of workgroup 0
    s_o: u32,         // stages 1 and 2: the state of (output o, part c) is state o * s_o + c * s_r
    s_r: u32,
    kept: Layout,     // input strides of the kept dims (n_out positions)
    red: Layout,      // input strides of the reduced dims (R positions, row-major)
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

// The running state of one reduction. v: sum/product/extreme value/0-1 flag; m, s: mean and sum of
// squared deviations (var/std, Chan's merge) or running max and sum of exp(x - max) (logsumexp);
// c: elements seen (0: the empty state, the identity of combine); i: index of the extreme.
struct S {
    v: CT,
    m: f32,
    s: f32,
    c: u32,
    i: u32,
};

fn nan_f() -> f32 { return bitcast<f32>(p.zero | 0x7fc00000u); }
fn inf_f() -> f32 { return bitcast<f32>(p.zero | 0x7f800000u); }
fn is_nan_f(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

fn empty() -> S { return S(CT(0), 0.0, 0.0, 0u, 0u); }

fn elem(v: CT, r: u32) -> S {
    var s = S(v, 0.0, 0.0, 1u, r);
    switch p.op {
        case 7u, 9u: { s.v = abs(v); }                  // norm1, norm_inf
        case 8u: { s.v = v * v; }                       // norm2
        case 5u, 6u: {                                  // var, std: inf - mean is NaN (PyTorch)
            s.m = ct_f32(v);
            if (is_nan_f(s.m) || (bitcast<u32>(s.m) & 0x7fffffffu) == 0x7f800000u) { s.s = nan_f(); }
        }
        case 10u: {                                      // logsumexp: NaN poisons the sum
            let f = ct_f32(v);
            if (is_nan_f(f)) { s.m = -inf_f(); s.s = nan_f(); } else { s.m = f; s.s = 1.0; }
        }
        // all, any (NaN is true); for vec2<u32>, CT(1) is (1, 1): a flag that min/max combine word by word
        case 11u, 12u: { s.v = select(CT(0), CT(1), ct_nz(v)); }
        default: {}
    }
    return s;
}

// Does b replace a as the extreme? A NaN beats numbers; equal values go to the lower index.
fn wins(a: S, b: S, want_max: bool) -> bool {
    let na = ct_nan(a.v);
    let nb = ct_nan(b.v);
    if (na || nb) { return nb && (!na || b.i < a.i); }
    if (ct_eq(b.v, a.v)) { return b.i < a.i; }
    return ct_gt(b.v, a.v) == want_max;
}

fn combine(a: S, b: S) -> S {
    if (a.c == 0u) { return b; }
    if (b.c == 0u) { return a; }
    var r = a;
    r.c = a.c + b.c;
    switch p.op {
        case 0u, 1u, 7u, 8u: { r.v = ct_add(a.v, b.v); }
        case 2u: { r.v = ct_mul(a.v, b.v); }
        case 3u, 9u, 13u: { if (wins(a, b, true)) { r.v = b.v; r.i = b.i; } }
        case 4u, 14u: { if (wins(a, b, false)) { r.v = b.v; r.i = b.i; } }
        case 5u, 6u: {
            let na = f32(a.c);
            let nb = f32(b.c);
            let d = b.m - a.m;
            r.m = a.m + d * (nb / (na + nb));
            r.s = a.s + b.s + d * d * (na * nb / (na + nb));
            if (is_nan_f(a.s) || is_nan_f(b.s)) { r.s = nan_f(); } // sticky, whatever the compiler assumes
        }
        case 10u: {
            let m = max(a.m, b.m);
            r.m = m;
            r.s = a.s * select(exp(a.m - m), 1.0, a.m == m) + b.s * select(exp(b.m - m), 1.0, b.m == m);
        }
        case 11u: { r.v = min(a.v, b.v); }
        case 12u: { r.v = max(a.v, b.v); }
        default: {}
    }
    return r;
}

fn finalize(s: S) -> CO {
    let n = f32(p.R);
    if (s.c == 0u) { // reducing nothing (amax and friends are refused before)
        switch p.op {
            case 1u, 5u, 6u: { return co_f(nan_f()); }
            case 2u, 11u: { return co_u(1u); }
            case 10u: { return co_f(-inf_f()); }
            default: { return co_u(0u); }
        }
    }
    switch p.op {
        case 1u: { return co_f(ct_f32(s.v) / n); }
        case 5u, 6u: {
            if (is_nan_f(s.s)) { return co_f(nan_f()); }
            var v = s.s / max(n - p.correction, 0.0);
            if (p.op == 6u) { v = sqrt(v); }
            return co_f(v);
        }
        case 8u: { return co_f(sqrt(ct_f32(s.v))); }
        case 10u: { return co_f(s.m + log(s.s)); }
        case 13u, 14u: { return co_u(s.i); }
        default: { return co_ct(s.v); }
    }
}

fn load_elem(base: u32, r: u32) -> S {
    if (p.red_simple != 0u) { return elem(ld(base + r * p.red_stride), r); }
    return elem(ld(base + layout_index(p.red, r)), r);
}

var<workgroup> sh: array<S, WG>;

// Combine over the subgroup's SG lanes by shuffles (nothing when SG is 1).
fn sg_reduce(s0: S) -> S {
    var s = s0;
    for (var m = 1u; m < SG; m = m << 1u) {
        s = combine(s, S(shx_ct(s.v, m), shx_f32(s.m, m), shx_f32(s.s, m), shx_u32(s.c, m), shx_u32(s.i, m)));
    }
    return s;
}

fn wg_reduce(s0: S, lid: u32) -> S {
    let s = sg_reduce(s0);
    if (lid % SG == 0u) { sh[lid / SG] = s; }
    workgroupBarrier();
    for (var stride = WG / 2u / SG; stride > 0u; stride = stride >> 1u) {
        if (lid < stride) { sh[lid] = combine(sh[lid], sh[lid + stride]); }
        workgroupBarrier();
    }
    let r = sh[0];
    workgroupBarrier(); // sh is reused by the next output
    return r;
}

// Rows, parts and states share one body (one copy of the workgroup tree keeps the shader small).
fn by_rows(w: u32, lid: u32) {
    let parts = p.stage == 1u;
    let gw = w + p.g0;
    if (select(w * PACK, gw / p.G, parts) >= p.n_out) { return; } // the whole workgroup leaves together
    var vals: array<CO, 4>;
    for (var k = 0u; k < select(PACK, 1u, parts); k = k + 1u) {
        let o = select(w * PACK + k, gw / p.G, parts);
        var lo = 0u;
        var hi = select(p.R, p.G, p.stage == 2u);
        if (parts) {
            lo = (gw % p.G) * p.part;
            hi = min(lo + p.part, p.R);
        }
        var s = empty();
        if (o < p.n_out) {
            let base = layout_index(p.kept, o) + p.off;
            for (var r = lo + lid; r < hi; r = r + WG) {
                if (p.stage == 2u) { s = combine(s, load_state(o * p.s_o + r * p.s_r)); } else { s = combine(s, load_elem(base, r)); }
            }
        }
        s = wg_reduce(s, lid);
        if (parts) {
            if (lid == 0u) { store_state(o * p.s_o + (gw % p.G) * p.s_r, s); }
        } else {
            vals[k] = finalize(s);
            if (lid == 0u && o < p.n_out) { st_idx(p.idx_off + o, s.i); }
        }
    }
    if (lid == 0u && !parts) { st(p.out_w0 + w, vals); }
}

// Stage 1 by columns: invocation t reduces part t / n_out of output t % n_out into its state.
fn column_part(t: u32) {
    let o = t % p.n_out;
    let c = t / p.n_out;
    if (c >= p.G) { return; }
    let base = layout_index(p.kept, o) + p.off;
    let lo = c * p.part;
    let hi = lo + min(p.part, p.R - lo); // lo + part may pass 2^32
    var s = empty();
    for (var r = lo; r < hi; r = r + 1u) { s = combine(s, load_elem(base, r)); }
    store_state(o * p.s_o + c * p.s_r, s);
}

fn by_columns(w: u32) {
    if (p.stage == 1u) {
        column_part(w);
        return;
    }
    if (w * PACK >= p.n_out) { return; }
    var vals: array<CO, 4>;
    for (var k = 0u; k < PACK; k = k + 1u) {
        let o = w * PACK + k;
        if (o < p.n_out) {
            var s = empty();
            if (p.stage == 2u) {
                for (var r = 0u; r < p.G; r = r + 1u) { s = combine(s, load_state(o * p.s_o + r * p.s_r)); }
            } else {
                let base = layout_index(p.kept, o) + p.off;
                for (var r = 0u; r < p.R; r = r + 1u) { s = combine(s, load_elem(base, r)); }
            }
            vals[k] = finalize(s);
            st_idx(p.idx_off + o, s.i);
        }
    }
    st(p.out_w0 + w, vals);
}

// A stage-1 state: VW words of v, then m, s, c, i.
fn store_state(j: u32, s: S) {
    let b = j * (VW + 4u);
    let v = ct_words(s.v);
    out[b] = v.x;
    out[b + VW - 1u] = select(v.x, v.y, VW == 2u);
    out[b + VW] = bitcast<u32>(s.m);
    out[b + VW + 1u] = bitcast<u32>(s.s);
    out[b + VW + 2u] = s.c;
    out[b + VW + 3u] = s.i;
}

fn load_state(j: u32) -> S {
    let b = j * (VW + 4u);
    return S(ct_of_words(vec2<u32>(x[b], x[b + VW - 1u])), bitcast<f32>(x[b + VW]), bitcast<f32>(x[b + VW + 1u]),
             x[b + VW + 2u], x[b + VW + 3u]);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * groups.x;
    if (p.col != 0u) {
        by_columns(g * WG + lid);
    } else {
        by_rows(g, lid);
    }
}
