// 64-bit integers as two 32-bit words: vec2<u32>(low, high), two's complement, the layout of an
// i64 element in storage (words 2i and 2i + 1). Arithmetic wraps modulo 2^64 like C's int64_t
// through uint64_t. Prepended to kernels by op_wgsl_lib_i64(); every function is exact.

fn i64_from_i32(x: i32) -> vec2<u32> { return vec2<u32>(bitcast<u32>(x), select(0u, 0xffffffffu, x < 0)); }
fn i64_from_u32(x: u32) -> vec2<u32> { return vec2<u32>(x, 0u); }
fn i64_is_neg(a: vec2<u32>) -> bool { return (a.y >> 31u) != 0u; }
fn i64_is_zero(a: vec2<u32>) -> bool { return (a.x | a.y) == 0u; }

fn i64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn i64_sub(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x));
}
fn i64_neg(a: vec2<u32>) -> vec2<u32> { return i64_sub(vec2<u32>(0u, 0u), a); }
fn i64_abs(a: vec2<u32>) -> vec2<u32> { return select(a, i64_neg(a), i64_is_neg(a)); }

// The full 64-bit product of two 32-bit words, from 16-bit halves (WGSL has no widening multiply).
fn u32_mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu; let a1 = a >> 16u;
    let b0 = b & 0xffffu; let b1 = b >> 16u;
    let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu); // < 3 * 2^16: no overflow
    return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
// The low 64 bits of the product: the same for signed and unsigned operands.
fn i64_mul(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let w = u32_mul_wide(a.x, b.x);
    return vec2<u32>(w.x, w.y + a.x * b.y + a.y * b.x);
}

fn i64_eq(a: vec2<u32>, b: vec2<u32>) -> bool { return all(a == b); }
fn u64_lt(a: vec2<u32>, b: vec2<u32>) -> bool { return select(a.x < b.x, a.y < b.y, a.y != b.y); }
fn i64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
    return select(a.x < b.x, bitcast<i32>(a.y) < bitcast<i32>(b.y), a.y != b.y);
}
fn i64_le(a: vec2<u32>, b: vec2<u32>) -> bool { return !i64_lt(b, a); }
fn i64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(a, b, i64_lt(b, a)); }
fn i64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> { return select(a, b, i64_lt(a, b)); }

// Shifts by n in [0, 63] (callers decide what larger or negative counts mean).
fn i64_shl(a: vec2<u32>, n: u32) -> vec2<u32> {
    if (n == 0u) { return a; }
    if (n < 32u) { return vec2<u32>(a.x << n, (a.y << n) | (a.x >> (32u - n))); }
    return vec2<u32>(0u, a.x << (n - 32u));
}
fn u64_shr(a: vec2<u32>, n: u32) -> vec2<u32> {
    if (n == 0u) { return a; }
    if (n < 32u) { return vec2<u32>((a.x >> n) | (a.y << (32u - n)), a.y >> n); }
    return vec2<u32>(a.y >> (n - 32u), 0u);
}
fn i64_shr(a: vec2<u32>, n: u32) -> vec2<u32> { // arithmetic: the sign fills in
    let fill = select(0u, 0xffffffffu, i64_is_neg(a));
    if (n == 0u) { return a; }
    if (n < 32u) { return vec2<u32>((a.x >> n) | (a.y << (32u - n)), bitcast<u32>(bitcast<i32>(a.y) >> n)); }
    return vec2<u32>(bitcast<u32>(bitcast<i32>(a.y) >> (n - 32u)), fill);
}

// Unsigned division: (quotient, remainder) packed as vec4(q.x, q.y, r.x, r.y); d must not be 0.
// Restoring long division, one bit a step; the loop skips the quotient's leading zero bits.
fn u64_divmod(n: vec2<u32>, d: vec2<u32>) -> vec4<u32> {
    if (n.y == 0u && d.y == 0u) { return vec4<u32>(n.x / d.x, 0u, n.x % d.x, 0u); }
    var q = vec2<u32>(0u, 0u);
    var r = vec2<u32>(0u, 0u);
    let top = select(31u - countLeadingZeros(n.x), 63u - countLeadingZeros(n.y), n.y != 0u);
    for (var i = i32(top); i >= 0; i--) {
        let bit = select((n.x >> u32(i)) & 1u, (n.y >> u32(i - 32)) & 1u, i >= 32);
        r = vec2<u32>((r.x << 1u) | bit, (r.y << 1u) | (r.x >> 31u));
        if (!u64_lt(r, d)) {
            r = i64_sub(r, d);
            if (i >= 32) { q.y |= 1u << u32(i - 32); } else { q.x |= 1u << u32(i); }
        }
    }
    return vec4<u32>(q, r);
}
// Signed division truncating toward zero, as C: (quotient, remainder with the dividend's sign).
fn i64_divmod_trunc(a: vec2<u32>, b: vec2<u32>) -> vec4<u32> {
    let qr = u64_divmod(i64_abs(a), i64_abs(b));
    let q = select(qr.xy, i64_neg(qr.xy), i64_is_neg(a) != i64_is_neg(b));
    let r = select(qr.zw, i64_neg(qr.zw), i64_is_neg(a));
    return vec4<u32>(q, r);
}

// To f32, rounded to nearest even like C's (float)int64_t (WGSL leaves u32 -> f32 rounding open).
fn i64_to_f32(a: vec2<u32>) -> f32 {
    let m = i64_abs(a); // -2^63 stays 2^63 read as unsigned
    var v: f32;
    if (m.y == 0u && m.x < 0x1000000u) {
        v = f32(m.x); // exact below 2^24
    } else {
        let e = select(31u - countLeadingZeros(m.x), 63u - countLeadingZeros(m.y), m.y != 0u); // top bit
        let sh = e - 23u;
        var mant = u64_shr(m, sh).x;            // 24 bits
        let rest = i64_sub(m, i64_shl(vec2<u32>(mant, 0u), sh));
        let half = i64_shl(vec2<u32>(1u, 0u), sh - 1u);
        if (u64_lt(half, rest) || (i64_eq(rest, half) && (mant & 1u) == 1u)) { mant += 1u; }
        var ex = e;
        if (mant == 0x1000000u) { mant = mant >> 1u; ex += 1u; }
        v = bitcast<f32>(((ex + 127u) << 23u) | (mant & 0x7fffffu));
    }
    return select(v, -v, i64_is_neg(a));
}

// From f32 truncating toward zero, as C's (int64_t)f for |f| < 2^63 (callers decide NaN and range).
fn i64_from_f32(f: f32) -> vec2<u32> {
    let a = abs(trunc(f));
    var m: vec2<u32>;
    if (a < 4294967296.0) {
        m = vec2<u32>(u32(a), 0u);
    } else { // a >= 2^32 is a multiple of 2^9 in f32, so both steps are exact
        let hi = floor(a / 4294967296.0);
        m = vec2<u32>(u32(a - hi * 4294967296.0), u32(hi));
    }
    return select(m, i64_neg(m), f < 0.0);
}
