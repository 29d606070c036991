// Creation ops whose value is a function of the position: arange, linspace, eye, one_hot.
// The prelude (src/ops/shape.c) supplies lib_index.wgsl, `alias CT` (the output's compute type),
// `const IS_FLOAT: bool`, `const PACK: u32` (output elements per word), `const WG: u32`, the
// storers st(w, array<CT, 4>) and st64(w, array<vec2<u32>, 4>), lib_i64.wgsl and, for one_hot's
// indices in binding `ib`, ld_idx / idx_ok / ld_mask.
// Floats compute in f32 (rounding differs from the reference's double by about one f32 ulp of
// the largest term); integers compute exactly in i32, but linspace into integers (linspace_int)
// repeats the reference's double arithmetic exactly, so that truncation lands on the same side.

struct Params {
    n: u32,
    op: u32,         // 0 arange, 1 linspace, 2 eye, 3 one_hot
    cols: u32,       // eye: columns; one_hot: depth
    inner: u32,      // one_hot: elements after the new axis
    off_i: u32,
    half: u32,       // linspace: elements computed from the start
    pad0: u32,
    pad1: u32,
    start: f32,
    step: f32,
    end: f32,
    on: f32,
    starti: i32,
    stepi: i32,
    oni: i32,
    offi: i32,
    off: f32,
    pad2: u32,
    pad3: u32,
    pad4: u32,
    d_start: vec2<u32>, // linspace_int: start, end and step as f64 bits (low word, high word)
    d_end: vec2<u32>,
    d_step: vec2<u32>,
    lo: vec2<u32>,   // linspace_int: the output dtype's range as i64, the reference's saturation
    hi: vec2<u32>,
    pad5: vec2<u32>,
    li: Layout,      // one_hot: the indices' layout
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ib: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

fn value(j: u32) -> CT {
    switch p.op {
        case 0u: {
            if (IS_FLOAT) { return CT(p.start + f32(j) * p.step); }
            return CT(p.starti + i32(j) * p.stepi);
        }
        case 1u: {
            if (j < p.half) { return CT(p.start + f32(j) * p.step); }
            return CT(p.end - f32(p.n - 1u - j) * p.step);
        }
        case 2u: {
            return select(CT(0), CT(1), j / p.cols == j % p.cols);
        }
        default: {
            let a = (j / p.inner) % p.cols;
            let xi = (j / (p.inner * p.cols)) * p.inner + j % p.inner;
            let at = layout_index(p.li, xi) + p.off_i;
            var v = ld_idx(at);
            if (v < 0) { v = v + i32(p.cols); }
            if (!idx_ok(at)) { v = -1; }
            if (v == i32(a)) {
                if (IS_FLOAT) { return CT(p.on); }
                return CT(p.oni);
            }
            if (IS_FLOAT) { return CT(p.off); }
            return CT(p.offi);
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * groups.x) * WG + lid;
    let first = w * PACK;
    if (first >= p.n) { return; }
    var v: array<CT, 4>;
    for (var k = 0u; k < PACK; k = k + 1u) {
        if (first + k < p.n) { v[k] = value(first + k); }
    }
    st(w, v);
}

// ---- linspace into integers: the reference's double arithmetic, emulated exactly ----------------
// f64 values are their bits, vec2<u32>(low word, high word). start + step * j and end - step * k
// round as IEEE double does, the product and then the sum (the reference has no fused
// multiply-add), to nearest even; the result is truncated and saturated as the reference stores
// a double into an integer. Subnormal inputs and results count as zero: such a result truncates
// to 0 either way, and a subnormal addend is far below half an ulp of any sum of magnitude >= 1.

const F64_NAN: vec2<u32> = vec2<u32>(0u, 0x7ff80000u);

fn f64_class(a: vec2<u32>) -> u32 { // 0 zero (or subnormal), 1 normal, 2 infinite, 3 NaN
    let be = (a.y >> 20u) & 0x7ffu;
    if (be == 0u) { return 0u; }
    if (be == 0x7ffu) { return select(2u, 3u, ((a.y & 0xfffffu) | a.x) != 0u); }
    return 1u;
}
fn f64_sign(a: vec2<u32>) -> u32 { return a.y & 0x80000000u; }
fn f64_bexp(a: vec2<u32>) -> i32 { return i32((a.y >> 20u) & 0x7ffu); }
// The 53-bit significand with its leading one: a normal value is f64_mant * 2^(f64_bexp - 1075).
fn f64_mant(a: vec2<u32>) -> vec2<u32> { return vec2<u32>(a.x, (a.y & 0xfffffu) | 0x100000u); }

// sign * n * 2^e for n in [2^61, 2^62) whose bit 0 is sticky (set when nonzero bits were shifted
// out), rounded to 53 bits, nearest even; overflow is infinite, a subnormal result zero.
fn f64_round(sign: u32, n: vec2<u32>, e: i32) -> vec2<u32> {
    var m = u64_shr(n, 9u);
    let rest = n.x & 0x1ffu;
    if (rest > 0x100u || (rest == 0x100u && (m.x & 1u) == 1u)) { m = i64_add(m, vec2<u32>(1u, 0u)); }
    var be = e + 61 + 1023;
    if (m.y == 0x200000u) { m = u64_shr(m, 1u); be += 1; } // rounded up to 2^53
    if (be >= 2047) { return vec2<u32>(0u, sign | 0x7ff00000u); }
    if (be <= 0) { return vec2<u32>(0u, sign); }
    return vec2<u32>(m.x, sign | (u32(be) << 20u) | (m.y & 0xfffffu));
}

// a * k, rounded once.
fn f64_mul_u32(a: vec2<u32>, k: u32) -> vec2<u32> {
    let c = f64_class(a);
    let sign = f64_sign(a);
    if (c == 3u || (c == 2u && k == 0u)) { return F64_NAN; }
    if (c == 2u) { return a; }
    if (c == 0u || k == 0u) { return vec2<u32>(0u, sign); }
    let m = f64_mant(a);
    let lo = u32_mul_wide(m.x, k);
    let hi = u32_mul_wide(m.y, k); // m.y < 2^21
    // the exact product in three words, w0 + w1 2^32 + w2 2^64, its top bit t in [52, 84]
    let w0 = lo.x;
    let w1 = lo.y + hi.x;
    let w2 = hi.y + select(0u, 1u, w1 < lo.y);
    let t = select(63 - i32(countLeadingZeros(w1)), 95 - i32(countLeadingZeros(w2)), w2 != 0u);
    var n: vec2<u32>;
    if (t > 61) {
        let r = u32(t - 61); // 1 to 23
        n = vec2<u32>((w0 >> r) | (w1 << (32u - r)), (w1 >> r) | (w2 << (32u - r)));
        if ((w0 & ((1u << r) - 1u)) != 0u) { n.x |= 1u; }
    } else {
        n = i64_shl(vec2<u32>(w0, w1), u32(61 - t)); // w2 is 0
    }
    return f64_round(sign, n, f64_bexp(a) - 1075 + t - 61);
}

// a + b, rounded once.
fn f64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let ca = f64_class(a);
    let cb = f64_class(b);
    if (ca == 3u || cb == 3u) { return F64_NAN; }
    if (ca == 2u && cb == 2u) { return select(F64_NAN, a, f64_sign(a) == f64_sign(b)); }
    if (ca == 2u || cb == 0u) { return a; }
    if (cb == 2u || ca == 0u) { return b; }
    // x the larger magnitude; both significands scaled to [2^61, 2^62), y's aligned to x's
    var x = a;
    var y = b;
    if (u64_lt(vec2<u32>(a.x, a.y & 0x7fffffffu), vec2<u32>(b.x, b.y & 0x7fffffffu))) { x = b; y = a; }
    let d = u32(f64_bexp(x) - f64_bexp(y));
    let nx = i64_shl(f64_mant(x), 9u);
    var ny = i64_shl(f64_mant(y), 9u);
    if (d >= 64u) {
        ny = vec2<u32>(1u, 0u); // only its sticky bit is left
    } else if (d > 0u) {
        let kept = u64_shr(ny, d);
        let lost = !i64_eq(i64_shl(kept, d), ny);
        ny = kept;
        if (lost) { ny.x |= 1u; }
    }
    var e = f64_bexp(x) - 1084;
    var n: vec2<u32>;
    if (f64_sign(x) == f64_sign(y)) {
        n = i64_add(nx, ny);
        if ((n.y >> 30u) != 0u) { // reached 2^62
            let s = n.x & 1u;
            n = u64_shr(n, 1u);
            n.x |= s;
            e += 1;
        }
    } else {
        n = i64_sub(nx, ny);
        if (i64_is_zero(n)) { return vec2<u32>(0u, 0u); }
        // back up to [2^61, 2^62): exact, as cancelling more than one bit needs d <= 1 (no sticky)
        let top = select(31u - countLeadingZeros(n.x), 63u - countLeadingZeros(n.y), n.y != 0u);
        n = i64_shl(n, 61u - top);
        e -= i32(61u - top);
    }
    return f64_round(f64_sign(x), n, e);
}

// Truncated toward zero, saturated to [-2^63, 2^63 - 1], NaN 0: the reference's store into i64.
fn f64_to_i64_sat(a: vec2<u32>) -> vec2<u32> {
    let c = f64_class(a);
    let e = f64_bexp(a) - 1023;
    let neg = f64_sign(a) != 0u;
    if (c == 3u || c == 0u || e < 0) { return vec2<u32>(0u, 0u); }
    if (c == 2u || e >= 63) { return select(vec2<u32>(0xffffffffu, 0x7fffffffu), vec2<u32>(0u, 0x80000000u), neg); }
    let m = f64_mant(a);
    let v = select(i64_shl(m, u32(max(e - 52, 0))), u64_shr(m, u32(max(52 - e, 0))), e <= 52);
    return select(v, i64_neg(v), neg);
}

// Element j as the reference computes it: from the start for the first half, else from the end;
// saturated to the output's range (clamping after truncation equals the reference's clamping of
// the double before it, the bounds being integers).
fn linspace_at(j: u32) -> vec2<u32> {
    var x: vec2<u32>;
    if (j < p.half) {
        x = f64_add(p.d_start, f64_mul_u32(p.d_step, j));
    } else {
        let t = f64_mul_u32(p.d_step, p.n - 1u - j);
        x = f64_add(p.d_end, vec2<u32>(t.x, t.y ^ 0x80000000u));
    }
    return i64_min(i64_max(f64_to_i64_sat(x), p.lo), p.hi);
}

@compute @workgroup_size(WG)
fn linspace_int(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * groups.x) * WG + lid;
    let first = w * PACK;
    if (first >= p.n) { return; }
    var v: array<vec2<u32>, 4>;
    for (var k = 0u; k < PACK; k = k + 1u) {
        if (first + k < p.n) { v[k] = linspace_at(first + k); }
    }
    st64(w, v);
}
