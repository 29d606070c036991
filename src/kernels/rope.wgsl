// Rotary position embedding into a contiguous output of x's shape [..., L, D]. Each invocation
// writes one whole output word (PACK elements). Feature d < rot rotates with its partner: (2j,
// 2j + 1) when interleaved, else (j, j + rot / 2), by the angle position * inv_freq[j], the
// product rounded to f32 as transformers computes it; features d >= rot are copied.
// No sin or cos: WGSL allows them an absolute error of 2^-11 and SwiftShader's are off by ~2e-4.
// The f32 angle is m * 2^s exactly (m its 24-bit significand), so its rotation is the product of
// the rotations by 2^k for the set bits of m, read from a table of (cos 2^k, sin 2^k) made on the
// host in double precision (src/ops/rope.c), times a short Taylor series for the bits below
// 2^KMIN. At most 24 complex products in f32: about 1e-6 from the exact cos/sin of the f32 angle
// at any magnitude (an f32 range reduction loses digits as the angle grows).
// The prelude (src/ops/rope.c) supplies lib_index.wgsl, PACK, CO, the loaders ldx (x, f32) and
// ldp (positions, i32) and the storer st.

struct Params {
    n: u32,          // output elements
    D: u32,
    rot: u32,
    interleaved: u32,
    off_x: u32,
    off_p: u32,
    af: f32,         // attention factor (YaRN), 1 otherwise
    pad: u32,
    lx: Layout,      // x
    lp: Layout,      // positions broadcast to x's shape (stride 0 along D)
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> pos: array<u32>;
// consts: the rotations by 2^k for k = KMIN .. 127 as (cos, sin) pairs, then rot / 2 inverse
// frequencies (rounded to f32 as transformers does)
@group(0) @binding(3) var<storage, read> consts: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

const KMIN: i32 = -6;                                   // src/ops/rope.c: ROPE_KMIN
const NTABLE: u32 = 134u;                               // 127 - KMIN + 1 entries

// (cos a, sin a) of an f32 angle, without sin or cos (see the top).
fn cos_sin(a: f32) -> vec2<f32> {
    let bits = bitcast<u32>(a);
    let e = (bits >> 23u) & 0xffu;
    if (e == 0xffu) { return vec2<f32>(a - a, a - a); }  // inf or NaN: NaN
    let m = (bits & 0x7fffffu) | select(0u, 0x800000u, e != 0u);
    let s = i32(max(e, 1u)) - 150;                      // |a| = m * 2^s
    let cut = u32(clamp(KMIN - s, 0, 24));              // the bits of m below 2^KMIN
    let r = ldexp(f32(m & ((1u << cut) - 1u)), s);      // 0 <= r < 2^KMIN, exact
    let r2 = r * r;
    var c = vec2<f32>(1.0 - r2 * (0.5 - r2 * (1.0 / 24.0)), r * (1.0 - r2 * (1.0 / 6.0 - r2 * (1.0 / 120.0))));
    var hi = m >> cut;
    var t = u32(s + i32(cut) - KMIN) * 2u;               // table index of the lowest bit left
    while (hi != 0u) {
        if ((hi & 1u) != 0u) {
            let q = vec2<f32>(consts[t], consts[t + 1u]);
            c = vec2<f32>(c.x * q.x - c.y * q.y, c.x * q.y + c.y * q.x);
        }
        hi = hi >> 1u;
        t += 2u;
    }
    return vec2<f32>(c.x, select(c.y, -c.y, (bits >> 31u) != 0u));
}

fn rope_elem(j: u32) -> f32 {
    let d = j % p.D;
    let v = ldx(layout_index(p.lx, j) + p.off_x);
    if (d >= p.rot) { return v; }
    let half = p.rot / 2u;
    var f: u32;
    var partner: u32; // element index of the partner
    var first: bool;
    if (p.interleaved != 0u) {
        f = d / 2u;
        first = (d & 1u) == 0u;
        partner = select(j - 1u, j + 1u, first);
    } else {
        f = d % half;
        first = d < half;
        partner = select(j - half, j + half, first);
    }
    let w = ldx(layout_index(p.lx, partner) + p.off_x);
    let position = f32(ldp(layout_index(p.lp, j) + p.off_p));
    let cs = cos_sin(position * consts[NTABLE * 2u + f]) * p.af;
    // (a, b) -> (a cos - b sin, b cos + a sin)
    return select(v * cs.x + w * cs.y, v * cs.x - w * cs.y, first);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * groups.x) * WG + lid;
    let first = w * PACK;
    if (first >= p.n) { return; }
    var v: array<CO, 4>;
    for (var k = 0u; k < PACK; k++) {
        if (first + k < p.n) { v[k] = rope_elem(first + k); }
    }
    st(w, v);
}
