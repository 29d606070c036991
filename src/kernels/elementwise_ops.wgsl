// The op functions of the elementwise kernels (elementwise.wgsl: strided inputs, one output word
// per invocation; elementwise_vec.wgsl: contiguous inputs, vec4 loads and stores). Included in
// their prelude by src/ops/elementwise.c, with lib_index.wgsl, `alias CI` (input compute type),
// `alias CO` (output compute type), `const PACK: u32` (output elements per word), `const WG: u32`
// (the workgroup size the device allows) and `fn op_line(a: CI, b: CI, c: CI) -> CO`, one line
// that calls one of the ew_* op functions below by name (src/ops/elementwise.c's ew_op_fn, through
// src/ops/ops.c's op_wgsl_call; a fused kernel's stages are the same lines); compute() is this
// file's "compute" section. (A WGSL error in this file is reported at a line counted
// from the start of the kernel file's prelude.)
//
// NaN: WGSL lets compilers assume that floats are never NaN (x != x, x == 0.0 and min/max may fold
// as if), so every NaN rule here tests the bits (is_nan) before comparing.

struct Params {
    n: u32,          // output elements
    op: u32,         // wgt_unary_op / wgt_binary_op
    off0: u32,       // element offsets of the inputs within their bindings
    off1: u32,
    off2: u32,
    alpha: f32,      // op parameters (wgt_unary_params, or a scalar)
    beta: f32,
    lo: f32,
    hi: f32,
    zero: u32,       // 0: NaN and infinity are built from it (they cannot be constants)
    offo: u32,       // output words before the chunk within the output binding
    ilo: u32,        // integer clamp bounds (i32 or u32 bits): ceil(lo), floor(hi) saturated
    ihi: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    l0: Layout,      // inputs broadcast to the output shape
    l1: Layout,
    l2: Layout,
};

@group(0) @binding(0) var<uniform> p: Params;

// The op parameters the 32-bit op functions read: a kernel of one op copies them from p
// (compute() starts with q = op_args()); a fused kernel (elementwise_fused.wgsl) sets each stage's
// own before calling its op function.
struct OpArgs {
    alpha: f32,
    beta: f32,
    lo: f32,
    hi: f32,
    ilo: u32,
    ihi: u32,
};
var<private> q: OpArgs;
fn op_args() -> OpArgs { return OpArgs(p.alpha, p.beta, p.lo, p.hi, p.ilo, p.ihi); }

const PI: f32 = 3.14159265358979;

// NaN and infinity cannot be constant expressions in WGSL: build them from a runtime zero.
fn nan_f() -> f32 { return bitcast<f32>(p.zero | 0x7fc00000u); }
fn inf_f() -> f32 { return bitcast<f32>(p.zero | 0x7f800000u); }
fn neg_bit(x: f32) -> bool { return (bitcast<u32>(x) >> 31u) == 1u; }
// Truth of a float as C and PyTorch see it: nonzero, NaN included.
fn truthy(x: f32) -> bool { return is_nan(x) || x != 0.0; }
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }

// erf: Abramowitz and Stegun 7.1.26 is not accurate enough; this uses the erfc continued
// expansion of Numerical Recipes (erfcc, fractional error < 1.2e-7).
fn erfc_f(x: f32) -> f32 {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
    return select(2.0 - r, r, x >= 0.0);
}
fn erf_f(x: f32) -> f32 {
    if (abs(x) < 0.5) { // series near zero keeps relative accuracy
        let x2 = x * x;
        return x * (1.1283791671 + x2 * (-0.3761263890 + x2 * (0.1128379167 + x2 * (-0.0268661706 + x2 * 0.0052239776))));
    }
    return 1.0 - erfc_f(x);
}
// Giles' single-precision erfinv, then one Newton step on erf.
fn erfinv_f(x: f32) -> f32 {
    if (x <= -1.0) { return select(nan_f(), -inf_f(), x == -1.0); }
    if (x >= 1.0) { return select(nan_f(), inf_f(), x == 1.0); }
    var w = -log((1.0 - x) * (1.0 + x));
    var r: f32;
    if (w < 5.0) {
        w = w - 2.5;
        r = 2.81022636e-08;
        r = 3.43273939e-07 + r * w; r = -3.5233877e-06 + r * w; r = -4.39150654e-06 + r * w;
        r = 0.00021858087 + r * w; r = -0.00125372503 + r * w; r = -0.00417768164 + r * w;
        r = 0.246640727 + r * w; r = 1.50140941 + r * w;
    } else {
        w = sqrt(w) - 3.0;
        r = -0.000200214257;
        r = 0.000100950558 + r * w; r = 0.00134934322 + r * w; r = -0.00367342844 + r * w;
        r = 0.00573950773 + r * w; r = -0.0076224613 + r * w; r = 0.00943887047 + r * w;
        r = 1.00167406 + r * w; r = 2.83297682 + r * w;
    }
    var y = r * x;
    let e = erf_f(y) - x;
    y = y - e / (1.1283791671 * exp(-y * y));
    return y;
}
// log|Gamma(x)|: Lanczos (g = 7, n = 9) for x >= 0.5, reflection below.
fn lgamma_pos(x: f32) -> f32 {
    let z = x - 1.0;
    var a = 0.99999999999980993;
    a = a + 676.5203681218851 / (z + 1.0);
    a = a - 1259.1392167224028 / (z + 2.0);
    a = a + 771.32342877765313 / (z + 3.0);
    a = a - 176.61502916214059 / (z + 4.0);
    a = a + 12.507343278686905 / (z + 5.0);
    a = a - 0.13857109526572012 / (z + 6.0);
    a = a + 9.9843695780195716e-6 / (z + 7.0);
    a = a + 1.5056327351493116e-7 / (z + 8.0);
    let t = z + 7.5;
    return 0.9189385332 + (z + 0.5) * log(t) - t + log(a);
}
fn lgamma_f(x: f32) -> f32 {
    if (is_inf(x)) { return inf_f(); }
    if (x < 0.5) {
        if (x == floor(x)) { return inf_f(); }
        return log(PI / abs(sin(PI * x))) - lgamma_pos(1.0 - x);
    }
    return lgamma_pos(x);
}
// digamma: recurrence up to x >= 6, then the asymptotic series; reflection for x < 0.
fn digamma_f(x0: f32) -> f32 {
    var x = x0;
    var r = 0.0;
    if (x <= 0.0) {
        if (x == 0.0) { return select(-inf_f(), inf_f(), neg_bit(x)); } // PyTorch: -+inf at +-0
        if (x == floor(x)) { return nan_f(); }
        r = -PI / tan(PI * x);
        x = 1.0 - x;
    }
    while (x < 6.0) { r = r - 1.0 / x; x = x + 1.0; }
    let f = 1.0 / (x * x);
    return r + log(x) - 0.5 / x - f * (1.0 / 12.0 - f * (1.0 / 120.0 - f * (1.0 / 252.0 - f * (1.0 / 240.0 - f / 132.0))));
}

// asinh and acosh as log(|x| + sqrt(x^2 -+ 1)) overflow in x^2 past 1.8e19: there the result is
// log(2 |x|) to f32 precision.
fn asinh_f(x: f32) -> f32 {
    if (is_nan(x)) { return x; }
    let a = abs(x);
    let r = select(asinh(a), log(a) + 0.69314718056, a > 1e9);
    return select(r, -r, x < 0.0);
}
fn acosh_f(x: f32) -> f32 {
    if (is_nan(x) || x < 1.0) { return nan_f(); }
    if (x > 1e9) { return log(x) + 0.69314718056; }
    return acosh(x);
}

fn round_even(x: f32) -> f32 {
    let r = round(x); // WGSL round() rounds half to even
    return r;
}

fn unary_f(op: u32, x: f32) -> f32 {
    switch op {
        case 0u: { return -x; }
        case 1u: { return abs(x); }
        case 2u: { if (is_nan(x)) { return 0.0; } return sign(x); } // PyTorch: sign(NaN) = 0
        case 3u: { return exp(x); }
        case 4u: { return exp2(x); }
        case 5u: { if (abs(x) < 1e-5) { return x + 0.5 * x * x; } return exp(x) - 1.0; }
        case 6u: { return log(x); }
        case 7u: { return log2(x); }
        case 8u: { if (abs(x) < 1e-4) { return x - 0.5 * x * x + x * x * x / 3.0; } return log(1.0 + x); }
        case 9u: { return sqrt(x); }
        case 10u: { return inverseSqrt(x); }
        case 11u: { return 1.0 / x; }
        case 12u: { return x * x; }
        case 13u: { return sin(x); }
        case 14u: { return cos(x); }
        case 15u: { return tan(x); }
        // asin and acos through atan2: some drivers' asin/acos lose 1e-4 relative (llvmpipe)
        case 16u: { if (abs(x) > 1.0) { return nan_f(); } return atan2(x, sqrt((1.0 - x) * (1.0 + x))); }
        case 17u: { if (abs(x) > 1.0) { return nan_f(); } return atan2(sqrt((1.0 - x) * (1.0 + x)), x); }
        case 18u: { return atan(x); }
        case 19u: { return sinh(x); }
        case 20u: { return cosh(x); }
        case 21u: { if (is_nan(x)) { return x; } return tanh(x); } // llvmpipe's GL drops NaN
        case 22u: { return asinh_f(x); }
        case 23u: { return acosh_f(x); }
        case 24u: { return atanh(x); }
        case 25u: { return erf_f(x); }
        case 26u: { return erfc_f(x); }
        case 27u: { return erfinv_f(x); }
        case 28u: { return lgamma_f(x); }
        case 29u: { return digamma_f(x); }
        case 30u: { return 1.0 / (1.0 + exp(-x)); }
        case 31u: { if (is_nan(x)) { return x; } return max(x, 0.0); }
        case 32u: { return 0.5 * x * (1.0 + erf_f(x * 0.70710678118)); }
        case 33u: { return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x))); }
        case 34u: { return x / (1.0 + exp(-x)); }
        case 35u: { // softplus: beta, threshold in hi
            let bx = q.beta * x;
            if (bx > q.hi) { return x; }
            return select(log(1.0 + exp(bx)), exp(bx), bx < -15.0) / q.beta;
        }
        case 36u: { let sp = select(log(1.0 + exp(x)), x, x > 20.0); return x * tanh(sp); }
        case 37u: { return select(q.alpha * (exp(x) - 1.0), x, x > 0.0); }
        case 38u: { return select(q.alpha * x, x, x > 0.0); }
        case 39u: { if (is_nan(x)) { return x; } return min(max(x, q.lo), q.hi); }
        case 40u: { let y = q.alpha * x + q.beta; if (is_nan(y)) { return y; } return min(max(y, 0.0), 1.0); }
        case 41u: { return x * min(max(x + 3.0, 0.0), 6.0) / 6.0; }
        case 42u: { return floor(x); }
        case 43u: { return ceil(x); }
        case 44u: { return round_even(x); }
        case 45u: { return trunc(x); }
        case 46u: { return x - trunc(x); }
        case 47u: { if (is_nan(x)) { return x; } return min(max(x, q.lo), q.hi); }
        case 48u: { return select(0.0, 1.0, is_nan(x)); }
        case 49u: { return select(0.0, 1.0, is_inf(x)); }
        case 50u: { return select(0.0, 1.0, !is_nan(x) && !is_inf(x)); }
        case 51u: { return select(0.0, 1.0, !truthy(x)); }
        default: { return nan_f(); }
    }
}

fn unary_i(op: u32, x: i32) -> i32 {
    switch op {
        case 0u: { return -x; }
        case 1u: { return abs(x); }
        case 2u: { return sign(x); }
        case 12u: { return x * x; }
        case 31u: { return max(x, 0); }
        case 39u, 47u: { // lower bound first, so lo > hi gives hi (PyTorch)
            var y = x;
            if (y < bitcast<i32>(q.ilo)) { y = bitcast<i32>(q.ilo); }
            if (y > bitcast<i32>(q.ihi)) { y = bitcast<i32>(q.ihi); }
            return y;
        }
        case 42u, 43u, 44u, 45u: { return x; }
        case 46u: { return 0; }
        case 48u, 49u: { return 0; }
        case 50u: { return 1; }
        case 51u: { return select(0, 1, x == 0); }
        case 52u: { return ~x; }
        default: { return 0; }
    }
}

fn unary_u(op: u32, x: u32) -> u32 {
    switch op {
        case 0u: { return 0u - x; }
        case 1u, 42u, 43u, 44u, 45u: { return x; }
        case 2u: { return select(0u, 1u, x != 0u); }
        case 12u: { return x * x; }
        case 31u: { return x; }
        case 39u, 47u: {
            var y = x;
            if (y < q.ilo) { y = q.ilo; }
            if (y > q.ihi) { y = q.ihi; }
            return y;
        }
        case 46u, 48u, 49u: { return 0u; }
        case 50u: { return 1u; }
        case 51u: { return select(0u, 1u, x == 0u); }
        case 52u: { return ~x; }
        default: { return 0u; }
    }
}

// C's fmod, exact: NaN for an infinite dividend, a zero divisor or a NaN; a for an infinite
// divisor. a - b trunc(a / b) loses everything once the quotient passes 2^24, so |b| scaled by a
// power of two to just below the remainder is subtracted instead (exact: d <= r < 2d), once per
// binary order of magnitude of the quotient.
fn fmod_f(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b) || is_inf(a) || b == 0.0) { return nan_f(); }
    if (is_inf(b)) { return a; }
    let ab = abs(b);
    var r = abs(a);
    for (var i = 0; i < 300 && r >= ab; i = i + 1) {
        var d = ldexp(ab, frexp(r).exp - frexp(ab).exp);
        if (d > r) { d = d * 0.5; }
        r = r - d;
    }
    return select(r, -r, neg_bit(a));
}
// PyTorch's floor division of floats (div_floor_floating): the floor of (a - fmod(a, b)) / b,
// so -1 // inf is -1 and inf // x is NaN, as in Python.
fn div_floor_f(a: f32, b: f32) -> f32 {
    if (b == 0.0) { return a / b; }
    let m = fmod_f(a, b);
    if (is_nan(m)) { return m; }
    var d = (a - m) / b;
    if (m != 0.0 && (b < 0.0) != (m < 0.0)) { d = d - 1.0; }
    if (d == 0.0) { return bitcast<f32>(select(0u, 0x80000000u, neg_bit(a) != neg_bit(b)) | p.zero); } // the sign of a / b
    var f = floor(d);
    if (d - f > 0.5) { f = f + 1.0; }
    return f;
}
// C's trunc(a / b) whose quotient rounds correctly at integers: a / b may be 2.5 ulp off (the H200
// gives 6 / 3 = 1.9999999), so finite cases divide the exact multiple a - fmod(a, b) and round.
fn div_trunc_f(a: f32, b: f32) -> f32 {
    if (b == 0.0 || is_nan(a) || is_nan(b) || is_inf(a) || is_inf(b)) { return trunc(a / b); }
    let d = (a - fmod_f(a, b)) / b;
    if (d == 0.0) { return bitcast<f32>(select(0u, 0x80000000u, neg_bit(a) != neg_bit(b)) | p.zero); } // the sign of a / b
    return round(d);
}
fn odd_int(y: f32) -> bool { return y == floor(y) && abs(y) < 16777216.0 && fract(y * 0.5) != 0.0; }
// C's pow, special values included (WGSL's pow is exp2(y log2(x)): undefined for x <= 0).
fn pow_f(a: f32, b: f32) -> f32 {
    if (b == 0.0 || a == 1.0) { return 1.0; }          // even for NaN
    if (is_nan(a) || is_nan(b)) { return nan_f(); }
    let ax = abs(a);
    if (is_inf(b)) {
        if (ax == 1.0) { return 1.0; }                   // (-1)^inf
        return select(0.0, inf_f(), (ax > 1.0) == (b > 0.0));
    }
    let odd = odd_int(b);
    if (ax == 0.0 || is_inf(a)) {                       // 0^b, inf^b: 0 or inf, signed for odd b
        let big = (ax == 0.0) == (b < 0.0);
        let m = select(0.0, inf_f(), big);
        return select(m, -m, odd && neg_bit(a));
    }
    if (a < 0.0) {
        if (b != floor(b)) { return nan_f(); }
        let m = pow(ax, b);
        return select(m, -m, odd);
    }
    return pow(a, b);
}

// atan2 with C's values at the origin (WGSL leaves atan2(0, 0) undefined).
fn atan2_f(a: f32, b: f32) -> f32 {
    if (a == 0.0 && b == 0.0) {
        let r = select(0.0, PI, (bitcast<u32>(b) >> 31u) == 1u);
        return select(r, -r, (bitcast<u32>(a) >> 31u) == 1u);
    }
    return atan2(a, b);
}

fn binary_f(op: u32, a: f32, b: f32) -> f32 {
    switch op {
        case 0u: { return a + b; }
        case 1u: { return a - b; }
        case 2u: { return a * b; }
        case 3u: { return a / b; }
        case 4u: { return div_floor_f(a, b); }
        case 5u: { return div_trunc_f(a, b); }
        case 6u: { // remainder: the sign of the divisor (PyTorch: fmod, then + b when the signs differ)
            let r = fmod_f(a, b);
            if (r != 0.0 && !is_nan(r) && ((r < 0.0) != (b < 0.0))) { return r + b; }
            return r;
        }
        case 7u: { return fmod_f(a, b); }
        case 8u: { return pow_f(a, b); }
        case 9u: { return atan2_f(a, b); }
        case 10u: { if (is_nan(a) || is_nan(b)) { return nan_f(); } return max(a, b); }
        case 11u: { if (is_nan(a) || is_nan(b)) { return nan_f(); } return min(a, b); }
        // comparisons: false with a NaN (true for ne), tested by bits
        case 12u: { return select(0.0, 1.0, !(is_nan(a) || is_nan(b)) && a == b); }
        case 13u: { return select(0.0, 1.0, is_nan(a) || is_nan(b) || a != b); }
        case 14u: { return select(0.0, 1.0, !(is_nan(a) || is_nan(b)) && a < b); }
        case 15u: { return select(0.0, 1.0, !(is_nan(a) || is_nan(b)) && a <= b); }
        case 16u: { return select(0.0, 1.0, !(is_nan(a) || is_nan(b)) && a > b); }
        case 17u: { return select(0.0, 1.0, !(is_nan(a) || is_nan(b)) && a >= b); }
        case 18u: { return select(0.0, 1.0, truthy(a) && truthy(b)); }
        case 19u: { return select(0.0, 1.0, truthy(a) || truthy(b)); }
        case 20u: { return select(0.0, 1.0, truthy(a) != truthy(b)); }
        default: { return nan_f(); }
    }
}

fn ipow(a: i32, b: i32) -> i32 {
    if (b < 0) { return select(select(0, select(-1, 1, (b & 1) == 0), a == -1), 1, a == 1); }
    var r = 1;
    var base = a;
    var e = b;
    while (e > 0) { if ((e & 1) != 0) { r = r * base; } base = base * base; e = e >> 1u; }
    return r;
}

fn binary_i(op: u32, a: i32, b: i32) -> i32 {
    switch op {
        case 0u: { return a + b; }
        case 1u: { return a - b; }
        case 2u: { return a * b; }
        case 3u, 5u: { if (b == 0) { return 0; } return a / b; }
        case 4u: {
            if (b == 0) { return 0; }
            let q = a / b;
            return select(q, q - 1, (a % b != 0) && ((a < 0) != (b < 0)));
        }
        case 6u: {
            if (b == 0) { return 0; }
            let r = a % b;
            return select(r, r + b, r != 0 && ((r < 0) != (b < 0)));
        }
        case 7u: { if (b == 0) { return 0; } return a % b; }
        case 8u: { return ipow(a, b); }
        case 10u: { return max(a, b); }
        case 11u: { return min(a, b); }
        case 12u: { return select(0, 1, a == b); }
        case 13u: { return select(0, 1, a != b); }
        case 14u: { return select(0, 1, a < b); }
        case 15u: { return select(0, 1, a <= b); }
        case 16u: { return select(0, 1, a > b); }
        case 17u: { return select(0, 1, a >= b); }
        case 18u: { return select(0, 1, a != 0 && b != 0); }
        case 19u: { return select(0, 1, a != 0 || b != 0); }
        case 20u: { return select(0, 1, (a != 0) != (b != 0)); }
        case 21u: { return a & b; }
        case 22u: { return a | b; }
        case 23u: { return a ^ b; }
        case 24u: { if (b < 0 || b >= 32) { return 0; } return a << u32(b); }
        case 25u: { if (b < 0 || b >= 32) { return select(0, -1, a < 0); } return a >> u32(b); }
        default: { return 0; }
    }
}

fn binary_u(op: u32, a: u32, b: u32) -> u32 {
    switch op {
        case 0u: { return a + b; }
        case 1u: { return a - b; }
        case 2u: { return a * b; }
        case 3u, 4u, 5u: { if (b == 0u) { return 0u; } return a / b; }
        case 6u, 7u: { if (b == 0u) { return 0u; } return a % b; }
        case 8u: { var r = 1u; var base = a; var e = b; while (e > 0u) { if ((e & 1u) != 0u) { r = r * base; } base = base * base; e = e >> 1u; } return r; }
        case 10u: { return max(a, b); }
        case 11u: { return min(a, b); }
        case 12u: { return select(0u, 1u, a == b); }
        case 13u: { return select(0u, 1u, a != b); }
        case 14u: { return select(0u, 1u, a < b); }
        case 15u: { return select(0u, 1u, a <= b); }
        case 16u: { return select(0u, 1u, a > b); }
        case 17u: { return select(0u, 1u, a >= b); }
        case 18u: { return select(0u, 1u, a != 0u && b != 0u); }
        case 19u: { return select(0u, 1u, a != 0u || b != 0u); }
        case 20u: { return select(0u, 1u, (a != 0u) != (b != 0u)); }
        case 21u: { return a & b; }
        case 22u: { return a | b; }
        case 23u: { return a ^ b; }
        case 24u: { if (b >= 32u) { return 0u; } return a << b; }
        case 25u: { if (b >= 32u) { return 0u; } return a >> b; }
        default: { return 0u; }
    }
}


// The op functions a compute() or a fused stage calls: one per family and compute type, each
// fn(op, a, b, c) -> its value (the unused arguments ignored). src/ops/elementwise.c's ew_op_fn
// picks one by name (ew_<family>_<f|i|u|l>, ew_cast_<from>_<to> for casts that convert) and, for a
// bool output, one of ew_bool_<f|i|u>; it writes only that call, so the unfused kernels and the
// fused stages (src/ops/elementwise_fuse.c) run the same WGSL for every op.
fn ew_unary_f(op: u32, a: f32, b: f32, c: f32) -> f32 { return unary_f(op, a); }
fn ew_unary_i(op: u32, a: i32, b: i32, c: i32) -> i32 { return unary_i(op, a); }
fn ew_unary_u(op: u32, a: u32, b: u32, c: u32) -> u32 { return unary_u(op, a); }
fn ew_binary_f(op: u32, a: f32, b: f32, c: f32) -> f32 { return binary_f(op, a, b); }
fn ew_binary_i(op: u32, a: i32, b: i32, c: i32) -> i32 { return binary_i(op, a, b); }
fn ew_binary_u(op: u32, a: u32, b: u32, c: u32) -> u32 { return binary_u(op, a, b); }
// where(a, b, c): b where a is true (nonzero, or NaN), else c
fn ew_where_f(op: u32, a: f32, b: f32, c: f32) -> f32 { return select(c, b, truthy(a)); }
fn ew_where_i(op: u32, a: i32, b: i32, c: i32) -> i32 { return select(c, b, a != i32(0)); }
fn ew_where_u(op: u32, a: u32, b: u32, c: u32) -> u32 { return select(c, b, a != u32(0)); }
// casts that keep the value (the output's conversion and storer do the rest)
fn ew_cast_f(op: u32, a: f32, b: f32, c: f32) -> f32 { return a; }
fn ew_cast_i(op: u32, a: i32, b: i32, c: i32) -> i32 { return a; }
fn ew_cast_u(op: u32, a: u32, b: u32, c: u32) -> u32 { return a; }
// float -> int: truncate, saturate at the dtype's limits, NaN -> 0 (the reference's rule; PyTorch
// leaves out-of-range casts undefined). The bounds are compared in f32 before converting: 2^31 and
// 2^32 are exact in f32, INT32_MAX is not.
fn ew_cast_f_u32(op: u32, a: f32, b: f32, c: f32) -> u32 {
    return select(select(u32(max(trunc(a), 0.0)), 4294967295u, a >= 4294967296.0), 0u, is_nan(a));
}
fn ew_cast_f_i32(op: u32, a: f32, b: f32, c: f32) -> i32 {
    return select(select(select(i32(trunc(a)), -2147483647 - 1, a < -2147483648.0), 2147483647, a >= 2147483648.0), 0, is_nan(a));
}
fn ew_cast_f_i8(op: u32, a: f32, b: f32, c: f32) -> i32 { return select(i32(clamp(trunc(a), -128.0, 127.0)), 0, is_nan(a)); }
fn ew_cast_f_u8(op: u32, a: f32, b: f32, c: f32) -> i32 { return select(i32(clamp(trunc(a), 0.0, 255.0)), 0, is_nan(a)); }
// a bool output (compute type i32): true when nonzero, a float also when NaN (C, PyTorch)
fn ew_bool_f(r: f32) -> i32 { return select(i32(0), i32(1), truthy(r)); }
fn ew_bool_i(r: i32) -> i32 { return select(i32(0), i32(1), r != i32(0)); }
fn ew_bool_u(r: u32) -> i32 { return select(i32(0), i32(1), r != u32(0)); }

// where's float condition loaded as integer values' compute type (src/ops/elementwise.c's loaders,
// through op_wgsl_loader_via): 1 where true (nonzero, or NaN), else 0; converting would make 0.5 false.
fn ew_truth_i(x: f32) -> i32 { return select(i32(0), i32(1), truthy(x)); }
fn ew_truth_u(x: f32) -> u32 { return select(u32(0), u32(1), truthy(x)); }

// ---- bf16 ----
// The bf16 bits of x (the packed path's stores, fused stages, index_scatter's bf16 codec through
// this section): round to nearest even on the upper 16 bits; NaN stays a quiet NaN (ops.c's bf16
// storer).
fn bf16_bits(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    return select((b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u, (b >> 16u) | 0x40u, (b & 0x7fffffffu) > 0x7f800000u);
}


// ---- i64 ----
// Everything below is included only in kernels with an i64 operand (src/ops/elementwise.c cuts the
// file here otherwise, so the 32-bit kernels' text stays as it was); it needs lib_i64.wgsl. An i64
// is vec2<u32>(low, high). The rules are the reference's (src/cpu/elementwise.c): arithmetic wraps
// modulo 2^64, x / 0 and x % 0 are 0, x / -1 is -x, shifts past 63 or negative give 0 (or -1 for
// a negative value shifted right).

const L_ZERO: vec2<u32> = vec2<u32>(0u, 0u);
const L_ONE: vec2<u32> = vec2<u32>(1u, 0u);
const L_MINUS_ONE: vec2<u32> = vec2<u32>(0xffffffffu, 0xffffffffu);

fn l_bool(b: bool) -> vec2<u32> { return select(L_ZERO, L_ONE, b); }
// where's condition in a kernel with 64-bit values (the loaders, as ew_truth_i above): a float
// condition of i64 values, and an i64 condition of 32-bit integer values, as 0 or 1
fn ew_truth_l(x: f32) -> vec2<u32> { return l_bool(truthy(x)); }
fn ew_l_truth_i(x: vec2<u32>) -> i32 { return select(i32(0), i32(1), !i64_is_zero(x)); }
fn ew_l_truth_u(x: vec2<u32>) -> u32 { return select(u32(0), u32(1), !i64_is_zero(x)); }
fn l_sign(x: vec2<u32>) -> vec2<u32> { return select(l_bool(!i64_is_zero(x)), L_MINUS_ONE, i64_is_neg(x)); }
// clamp's bounds in 64 bits: (ilo, pad0) and (ihi, pad1) hold ceil(lo) and floor(hi) in i64 kernels.
fn l_lo() -> vec2<u32> { return vec2<u32>(p.ilo, p.pad0); }
fn l_hi() -> vec2<u32> { return vec2<u32>(p.ihi, p.pad1); }

fn unary_l(op: u32, x: vec2<u32>) -> vec2<u32> {
    switch op {
        case 0u: { return i64_neg(x); }
        case 1u: { return i64_abs(x); }
        case 2u: { return l_sign(x); }
        case 12u: { return i64_mul(x, x); }
        case 31u: { return select(L_ZERO, x, i64_lt(L_ZERO, x)); }
        case 39u, 47u: { // the lower bound first, so lo > hi gives hi (PyTorch)
            var y = x;
            if (i64_lt(y, l_lo())) { y = l_lo(); }
            if (i64_lt(l_hi(), y)) { y = l_hi(); }
            return y;
        }
        case 42u, 43u, 44u, 45u: { return x; }
        case 46u, 48u, 49u: { return L_ZERO; }
        case 50u: { return L_ONE; }
        case 51u: { return l_bool(i64_is_zero(x)); }
        case 52u: { return ~x; }
        default: { return L_ZERO; }
    }
}

fn ipow_l(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    if (i64_is_neg(b)) { // only 1 and -1 have integer reciprocals
        if (i64_eq(a, L_ONE)) { return L_ONE; }
        if (i64_eq(a, L_MINUS_ONE)) { return select(L_ONE, L_MINUS_ONE, (b.x & 1u) == 1u); }
        return L_ZERO;
    }
    var r = L_ONE;
    var base = a;
    var e = b;
    while (!i64_is_zero(e)) {
        if ((e.x & 1u) == 1u) { r = i64_mul(r, base); }
        base = i64_mul(base, base);
        e = u64_shr(e, 1u);
    }
    return r;
}

// A shift count outside [0, 63] (negative counts read as huge unsigned ones).
fn l_shift_out(b: vec2<u32>) -> bool { return b.y != 0u || b.x > 63u; }

fn binary_l(op: u32, a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    switch op {
        case 0u: { return i64_add(a, b); }
        case 1u: { return i64_sub(a, b); }
        case 2u: { return i64_mul(a, b); }
        case 3u, 4u, 5u, 6u, 7u: {
            if (i64_is_zero(b)) { return L_ZERO; }
            if (i64_eq(b, L_MINUS_ONE)) { return select(i64_neg(a), L_ZERO, op >= 6u); } // no trap at -2^63 / -1
            let qr = i64_divmod_trunc(a, b);
            let q = qr.xy;
            let r = qr.zw;
            let differ = !i64_is_zero(r) && (i64_is_neg(r) != i64_is_neg(b)); // r has a's sign
            if (op == 4u) { return select(q, i64_sub(q, L_ONE), differ); }
            if (op == 6u) { return select(r, i64_add(r, b), differ); }
            if (op == 7u) { return r; }
            return q;
        }
        case 8u: { return ipow_l(a, b); }
        case 10u: { return i64_max(a, b); }
        case 11u: { return i64_min(a, b); }
        case 12u: { return l_bool(i64_eq(a, b)); }
        case 13u: { return l_bool(!i64_eq(a, b)); }
        case 14u: { return l_bool(i64_lt(a, b)); }
        case 15u: { return l_bool(i64_le(a, b)); }
        case 16u: { return l_bool(i64_lt(b, a)); }
        case 17u: { return l_bool(i64_le(b, a)); }
        case 18u: { return l_bool(!i64_is_zero(a) && !i64_is_zero(b)); }
        case 19u: { return l_bool(!i64_is_zero(a) || !i64_is_zero(b)); }
        case 20u: { return l_bool(i64_is_zero(a) != i64_is_zero(b)); }
        case 21u: { return a & b; }
        case 22u: { return a | b; }
        case 23u: { return a ^ b; }
        case 24u: { if (l_shift_out(b)) { return L_ZERO; } return i64_shl(a, b.x); }
        case 25u: {
            if (l_shift_out(b)) { return select(L_ZERO, L_MINUS_ONE, i64_is_neg(a)); }
            return i64_shr(a, b.x);
        }
        default: { return L_ZERO; }
    }
}

// Float to i64 as the reference casts: truncated, saturated at +-2^63, NaN -> 0.
fn l_from_f32_sat(f: f32) -> vec2<u32> {
    if (is_nan(f)) { return L_ZERO; }
    if (f >= 9223372036854775808.0) { return vec2<u32>(0xffffffffu, 0x7fffffffu); }
    if (f <= -9223372036854775808.0) { return vec2<u32>(0u, 0x80000000u); }
    return i64_from_f32(f);
}

// m (unsigned) rounded to nearest even at `bits` significant bits.
fn u64_round_bits(m: vec2<u32>, bits: u32) -> vec2<u32> {
    if (i64_is_zero(m)) { return m; }
    let top = select(31u - countLeadingZeros(m.x), 63u - countLeadingZeros(m.y), m.y != 0u);
    if (top < bits) { return m; }
    let sh = top + 1u - bits;
    var kept = u64_shr(m, sh);
    let rest = i64_sub(m, i64_shl(kept, sh));
    let half = i64_shl(L_ONE, sh - 1u);
    if (u64_lt(half, rest) || (i64_eq(rest, half) && (kept.x & 1u) == 1u)) { kept = i64_add(kept, L_ONE); }
    return i64_shl(kept, sh);
}
// i64 to a float of `bits` significant bits (f32 24, f16 11, bf16 8) as the reference converts:
// to double first (53 bits), then to the target, each rounding to nearest even. The result is exact
// in the target, so storing it rounds no further.
fn l_to_float(a: vec2<u32>, bits: u32) -> f32 {
    let r = u64_round_bits(u64_round_bits(i64_abs(a), 53u), bits);
    let m = abs(i64_to_f32(r)); // exact; 2^63 reads as -2^63
    return select(m, -m, i64_is_neg(a));
}

// The op functions of the i64 kernels (as ew_unary_f and the rest above; compute() calls one).
fn ew_unary_l(op: u32, a: vec2<u32>, b: vec2<u32>, c: vec2<u32>) -> vec2<u32> { return unary_l(op, a); }
fn ew_binary_l(op: u32, a: vec2<u32>, b: vec2<u32>, c: vec2<u32>) -> vec2<u32> { return binary_l(op, a, b); }
fn ew_where_l(op: u32, a: vec2<u32>, b: vec2<u32>, c: vec2<u32>) -> vec2<u32> { return select(c, b, !i64_is_zero(a)); }
fn ew_cast_l(op: u32, a: vec2<u32>, b: vec2<u32>, c: vec2<u32>) -> vec2<u32> { return a; }
fn ew_cast_f_l(op: u32, a: f32, b: f32, c: f32) -> vec2<u32> { return l_from_f32_sat(a); }
// i64 to a float: rounded once to the target's significant bits (f32 24, f16 11, bf16 8)
fn ew_cast_l_f32(op: u32, a: vec2<u32>, b: vec2<u32>, c: vec2<u32>) -> f32 { return l_to_float(a, 24u); }
fn ew_cast_l_f16(op: u32, a: vec2<u32>, b: vec2<u32>, c: vec2<u32>) -> f32 { return l_to_float(a, 11u); }
fn ew_cast_l_bf16(op: u32, a: vec2<u32>, b: vec2<u32>, c: vec2<u32>) -> f32 { return l_to_float(a, 8u); }

// ---- compute ----
// compute() of an unfused kernel (the 32-bit kernels paste this section, the 64-bit ones hold the
// whole file): the op parameters from p, then op_line, the one line src/ops/elementwise.c has
// ops.c's op_wgsl_call write to call the op function by name. (A fused kernel's stages set their
// own parameters and are such lines themselves.) Setting q here, next to its use, rather than
// once in main keeps the parameters out of the registers the kernel's loop holds.
fn compute(a: CI, b: CI, c: CI) -> CO {
    q = op_args();
    return op_line(a, b, c);
}
