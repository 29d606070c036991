// Row-wise normalisations: softmax, log_softmax, layer_norm, rms_norm, group_norm and batch_norm
// with given statistics. One workgroup handles PACK rows (the output elements per 32-bit word, so
// no two workgroups share a word): pass 1 reduces each row to its statistics (WG invocations,
// then subgroup shuffles and a tree in workgroup memory), pass 2 writes the row.
//
// Row o (a position over the kept dims, p.kept) holds R elements (p.row: one stride when
// p.row_simple, else up to 8 dims). Output element (o, r) lives at
//   (o / inner) * R * inner + o % inner + r * inner
// (inner = 1 when the normalised dims are the last ones; the op guarantees inner == 1 or
// inner % PACK == 0).
// Weight, bias, mean and var element of (o, r): (o % wmod) * wmul + r / wdiv.
//
// The prelude (src/ops/norm.c) supplies lib_index.wgsl, `const PACK: u32`, `const SG: u32`,
// `const WG: u32` (the workgroup size, a power of two the device allows),
// the loader ldx (-> f32), the storer st and lib_subgroup.wgsl's shuffles (shx_f32). Weight, bias,
// mean and var load through ldp, which reads their dtype from p.pdt (so they add no pipeline
// variants).

struct Params {
    n_rows: u32,
    R: u32,
    op: u32,          // 0 softmax, 1 log_softmax, 2 layer_norm, 3 rms_norm, 4 given mean/var
    off: u32,         // element offsets within the bindings
    row_simple: u32,
    row_stride: u32,
    eps: f32,
    zero: u32,
    inner: u32,
    has_w: u32,
    has_b: u32,
    wmod: u32,
    wmul: u32,
    wdiv: u32,
    w_off: u32,
    b_off: u32,
    m_off: u32,
    v_off: u32,
    pdt: u32,         // 2 bits each for weight, bias, mean, var: 0 f32, 1 f16, 2 bf16
    row0: u32,        // rows before this dispatch (work split over bindings), for parameter indices
    out_w0: u32,      // word offset of this dispatch's output within its binding
    pad0: u32,
    pad1: u32,
    pad2: u32,
    kept: Layout,
    row: Layout,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<storage, read> ws: array<u32>;
@group(0) @binding(4) var<storage, read> bs: array<u32>;
@group(0) @binding(5) var<storage, read> ms: array<u32>;
@group(0) @binding(6) var<storage, read> vs: array<u32>;

// Row statistics. softmax: a = running max, b = sum of exp(x - a), c = 1 when the row holds a NaN
// or +inf (then every output is NaN, as PyTorch's x - max is; a flag, because WGSL compilers may
// assume no NaN and drop it from max and exp). layer_norm: a = mean,
// b = sum of squared deviations, c = count (Chan's merge). rms_norm: b = sum of squares.
struct T {
    a: f32,
    b: f32,
    c: f32,
};

fn param_word(which: u32, j: u32) -> u32 {
    switch which {
        case 0u: { return ws[j]; }
        case 1u: { return bs[j]; }
        case 2u: { return ms[j]; }
        default: { return vs[j]; }
    }
}

// Element i of parameter `which` (0 weight, 1 bias, 2 mean, 3 var) as f32.
fn ldp(which: u32, i: u32) -> f32 {
    let dt = (p.pdt >> (which * 2u)) & 3u;
    if (dt == 0u) { return bitcast<f32>(param_word(which, i)); }
    let h = (param_word(which, i >> 1u) >> ((i & 1u) * 16u)) & 0xffffu;
    if (dt == 1u) { return unpack2x16float(h).x; }
    return bitcast<f32>(h << 16u);
}

fn inf_f() -> f32 { return bitcast<f32>(p.zero | 0x7f800000u); }
fn nan_f() -> f32 { return bitcast<f32>(p.zero | 0x7fc00000u); }
fn nan_or_pos_inf(v: f32) -> bool { let b = bitcast<u32>(v); return (b & 0x7fffffffu) > 0x7f800000u || b == 0x7f800000u; }

fn t_empty() -> T {
    if (p.op <= 1u) { return T(-inf_f(), 0.0, 0.0); }
    return T(0.0, 0.0, 0.0);
}

fn t_add(t: T, v: f32) -> T {
    var r = t;
    switch p.op {
        case 0u, 1u: {
            if (nan_or_pos_inf(v)) { r.c = 1.0; return r; }
            if (v > t.a) {
                r.b = t.b * exp(t.a - v) + 1.0;
                r.a = v;
            } else if (!(t.a == -inf_f() && v == -inf_f())) {
                r.b = t.b + exp(v - t.a); // NaN poisons the sum
            }
        }
        case 2u: {
            r.c = t.c + 1.0;
            let d = v - t.a;
            r.a = t.a + d / r.c;
            r.b = t.b + d * (v - r.a);
        }
        default: { r.b = t.b + v * v; }
    }
    return r;
}

fn t_combine(x: T, y: T) -> T {
    var r = x;
    switch p.op {
        case 0u, 1u: {
            let m = max(x.a, y.a);
            r.a = m;
            r.c = max(x.c, y.c);
            r.b = x.b * select(exp(x.a - m), 1.0, x.a == m) + y.b * select(exp(y.a - m), 1.0, y.a == m);
        }
        case 2u: {
            let n = x.c + y.c;
            if (y.c == 0.0) { return x; }
            if (x.c == 0.0) { return y; }
            let d = y.a - x.a;
            r.a = x.a + d * (y.c / n);
            r.b = x.b + y.b + d * d * (x.c * y.c / n);
            r.c = n;
        }
        default: { r.b = x.b + y.b; }
    }
    return r;
}

var<workgroup> sh: array<T, WG>;
var<workgroup> stat_a: array<f32, 4>;  // per row of the group: max / mean
var<workgroup> stat_b: array<f32, 4>;  // sum of exp / rstd
var<workgroup> stat_c: array<f32, 4>;  // softmax: 1 for a row of NaN

// Combine over the subgroup's SG lanes by shuffles (nothing when SG is 1).
fn sg_combine(t0: T) -> T {
    var t = t0;
    for (var m = 1u; m < SG; m = m << 1u) {
        t = t_combine(t, T(shx_f32(t.a, m), shx_f32(t.b, m), shx_f32(t.c, m)));
    }
    return t;
}

fn wg_combine(t0: T, lid: u32) -> T {
    let t = sg_combine(t0);
    if (lid % SG == 0u) { sh[lid / SG] = t; }
    workgroupBarrier();
    for (var stride = WG / 2u / SG; stride > 0u; stride = stride >> 1u) {
        if (lid < stride) { sh[lid] = t_combine(sh[lid], sh[lid + stride]); }
        workgroupBarrier();
    }
    let r = sh[0];
    workgroupBarrier();
    return r;
}

fn row_index(r: u32) -> u32 {
    if (p.row_simple != 0u) { return r * p.row_stride; }
    return layout_index(p.row, r);
}

fn param_index(o: u32, r: u32) -> u32 { return ((o + p.row0) % p.wmod) * p.wmul + r / p.wdiv; }

// The output value of element r of row o, from the row's statistics.
fn finish(o: u32, k: u32, r: u32, v: f32) -> f32 {
    switch p.op {
        case 0u: { if (stat_c[k] != 0.0) { return nan_f(); } return exp(v - stat_a[k]) / stat_b[k]; }
        case 1u: { if (stat_c[k] != 0.0) { return nan_f(); } return v - stat_a[k] - log(stat_b[k]); }
        default: {
            let i = param_index(o, r);
            var y = (v - stat_a[k]) * stat_b[k];
            if (p.op == 4u) { // given statistics: a = mean, rstd from var
                y = (v - ldp(2u, p.m_off + i)) * inverseSqrt(ldp(3u, p.v_off + i) + p.eps);
            }
            if (p.has_w != 0u) { y = y * ldp(0u, p.w_off + i); }
            if (p.has_b != 0u) { y = y + ldp(1u, p.b_off + i); }
            return y;
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let o0 = (wid.x + wid.y * groups.x) * PACK;
    if (o0 >= p.n_rows) { return; }
    var base: array<u32, 4>;
    for (var k = 0u; k < PACK; k = k + 1u) {
        let o = min(o0 + k, p.n_rows - 1u);
        base[k] = layout_index(p.kept, o) + p.off;
        if (p.op != 4u) {
            var t = t_empty();
            for (var r = lid; r < p.R; r = r + WG) { t = t_add(t, ldx(base[k] + row_index(r))); }
            t = wg_combine(t, lid);
            if (lid == 0u) {
                let n = f32(p.R);
                switch p.op {
                    case 0u, 1u: { stat_a[k] = t.a; stat_b[k] = t.b; stat_c[k] = t.c; }
                    case 2u: { stat_a[k] = t.a; stat_b[k] = inverseSqrt(t.b / n + p.eps); }
                    default: { stat_a[k] = 0.0; stat_b[k] = inverseSqrt(t.b / n + p.eps); }
                }
            }
        }
    }
    workgroupBarrier();
    // R words per group: PACK consecutive elements of the rows laid end to end (inner == 1), or
    // element r of the PACK rows side by side (inner % PACK == 0).
    let total = p.n_rows * p.R;
    for (var t = lid; t < p.R; t = t + WG) {
        var v: array<f32, 4>;
        var word: u32;
        if (p.inner == 1u) {
            if (o0 * p.R + t * PACK >= total) { break; } // past the output: robust access would clamp it onto the last word
            word = p.out_w0 + o0 * p.R / PACK + t;
            for (var k = 0u; k < PACK; k = k + 1u) {
                let e = t * PACK + k;
                let row = e / p.R;
                let r = e % p.R;
                if (o0 * p.R + e < total) { v[k] = finish(o0 + row, row, r, ldx(base[row] + row_index(r))); }
            }
        } else {
            word = ((o0 / p.inner) * p.R * p.inner + o0 % p.inner + t * p.inner) / PACK;
            for (var k = 0u; k < PACK; k = k + 1u) { v[k] = finish(o0 + k, k, t, ldx(base[k] + row_index(t))); }
        }
        st(word, v);
    }
}
