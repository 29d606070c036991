// Resampling: F.interpolate over [H, W] planes (a 1-D resize is a [1, W] plane; nearest,
// nearest-exact, linear, cubic) and 2-D F.grid_sample (bilinear, nearest, bicubic; zeros/border/reflection
// padding). One invocation writes one output word (PACK elements). Source coordinates are computed
// in f32 as PyTorch's kernels compute them, so nearest picks the same pixels as the reference.
// The prelude (src/ops/resample.c) supplies lib_index.wgsl, `alias CT` (f32, i32, u32, or
// vec2<u32>: an exact i64 from lib_i64.wgsl, nearest modes only), `const PACK: u32`,
// `fn ldx(i: u32) -> CT` (binding xs), `fn ldg(i: u32) -> f32` (binding gs: the grid; the input
// again for interpolate), `fn st(w: u32, v: array<CT, 4>)` (binding out) and lib_ct.wgsl's section
// for CT (ct_f32, ct_of: to and from f32).

struct Params {
    n: u32,         // output elements of this dispatch
    out_w0: u32,    // its first output word in the out binding
    off_x: u32,     // element offsets in the xs / gs bindings
    off_g: u32,
    op: u32,        // 0 interpolate, 1 grid_sample
    mode: u32,      // interpolate: 0 nearest, 1 nearest-exact, 2 linear, 3 cubic; grid: 0 bilinear, 1 nearest, 2 bicubic
    align: u32,     // align_corners
    padding: u32,   // grid: 0 zeros, 1 border, 2 reflection
    H: u32, W: u32, OH: u32, OW: u32,
    sxh: u32, sxw: u32, C: u32, sp2: u32,   // sp2: two spatial dims (else H = OH = 1)
    scale_h: f32, scale_w: f32,              // interpolate: PyTorch's f32 scales per dim
    sgn: u32, sgh: u32, sgw: u32, sgc: u32,  // grid strides: n, Ho, Wo, coordinate
    simple: u32,    // 1: the batch dims walk with one stride, plane_stride
    plane_stride: u32,
    lead: Layout,   // interpolate: the batch dims; grid: [N, C]
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<u32>;
@group(0) @binding(2) var<storage, read> gs: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

fn ldx_f32(i: u32) -> f32 { return ct_f32(ldx(i)); }

// Source index of output position o for nearest / nearest-exact along a dim (n in, m out, scale s).
fn nearest_index(o: u32, n: u32, m: u32, s: f32) -> u32 {
    var i: u32;
    if (p.mode == 1u) { i = u32(floor((f32(o) + 0.5) * s)); }
    else if (m == n) { i = o; }                 // PyTorch's nearest_idx shortcuts
    else if (m == 2u * n) { i = o >> 1u; }
    else { i = u32(floor(f32(o) * s)); }
    return min(i, n - 1u);
}

fn cubic1(x: f32) -> f32 { let A = -0.75; return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0; }
fn cubic2(x: f32) -> f32 { let A = -0.75; return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A; }

// Linear (2 taps in .xy) or cubic (4 taps) of output position o along a dim: indices and weights.
struct Taps { i: vec4<u32>, w: vec4<f32> };

fn dim_taps(o: u32, n: u32, s: f32) -> Taps {
    var src = select(s * (f32(o) + 0.5) - 0.5, s * f32(o), p.align != 0u);
    if (p.mode == 2u && src < 0.0) { src = 0.0; }
    let i0 = min(i32(floor(src)), i32(n) - 1);
    let lam = clamp(src - f32(i0), 0.0, 1.0);
    if (p.mode == 2u) {
        return Taps(vec4<u32>(u32(i0), u32(i0) + select(0u, 1u, i0 < i32(n) - 1), 0u, 0u),
                    vec4<f32>(1.0 - lam, lam, 0.0, 0.0));
    }
    let hi = i32(n) - 1;
    return Taps(vec4<u32>(u32(clamp(i0 - 1, 0, hi)), u32(clamp(i0, 0, hi)), u32(clamp(i0 + 1, 0, hi)),
                          u32(clamp(i0 + 2, 0, hi))),
                vec4<f32>(cubic2(lam + 1.0), cubic1(lam), cubic1(1.0 - lam), cubic2(2.0 - lam)));
}

// One row of taps: the weighted sum of 2 (linear) or 4 (cubic) elements at row + t.i * sxw.
fn row_sum(row: u32, t: Taps) -> f32 {
    let a = ldx_f32(row + t.i.x * p.sxw) * t.w.x + ldx_f32(row + t.i.y * p.sxw) * t.w.y;
    if (p.mode == 2u) { return a; }
    return a + ldx_f32(row + t.i.z * p.sxw) * t.w.z + ldx_f32(row + t.i.w * p.sxw) * t.w.w;
}

fn interp_one(e: u32) -> CT {
    let per = p.OH * p.OW;
    let plane = e / per;
    let r = e % per;
    let oh = r / p.OW;
    let ow = r % p.OW;
    let base = p.off_x + plane_index(p.simple, p.plane_stride, p.lead, plane);
    if (p.mode <= 1u) {
        var ih = 0u;
        if (p.sp2 != 0u) { ih = nearest_index(oh, p.H, p.OH, p.scale_h); }
        return ldx(base + ih * p.sxh + nearest_index(ow, p.W, p.OW, p.scale_w) * p.sxw);
    }
    let tw = dim_taps(ow, p.W, p.scale_w);
    if (p.sp2 == 0u) { return ct_of(row_sum(base, tw)); }
    let th = dim_taps(oh, p.H, p.scale_h);
    var acc = th.w.x * row_sum(base + th.i.x * p.sxh, tw) + th.w.y * row_sum(base + th.i.y * p.sxh, tw);
    if (p.mode == 3u) {
        acc = acc + th.w.z * row_sum(base + th.i.z * p.sxh, tw) + th.w.w * row_sum(base + th.i.w * p.sxh, tw);
    }
    return ct_of(acc);
}

fn finite(v: f32) -> bool { return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u; }

fn reflect(v0: f32, twice_lo: f32, twice_hi: f32) -> f32 {
    if (twice_lo == twice_hi) { return 0.0; }
    let mn = twice_lo / 2.0;
    let span = (twice_hi - twice_lo) / 2.0;
    let v = abs(v0 - mn);
    let extra = v - span * floor(v / span); // fmod of a non-negative value
    let flips = u32(floor(v / span));
    return select(span - extra + mn, extra + mn, (flips & 1u) == 0u);
}

// PyTorch's grid_sampler_compute_source_index. NaN and infinity are tested on the bits, never
// through comparisons (which a compiler may assume ordered): NaN, and infinity under reflection
// (fmod gives NaN), clip to S - 1 as std::min(S - 1, std::max(c, 0)) does; zeros reads them at -100.
fn source_index(c0: f32, size: u32) -> f32 {
    let s = f32(size);
    var c = select(((c0 + 1.0) * s - 1.0) / 2.0, ((c0 + 1.0) / 2.0) * (s - 1.0), p.align != 0u);
    if (p.padding == 0u) {
        if (!finite(c) || c > 2147483647.0 || c < -2147483648.0) { c = -100.0; }
        return c;
    }
    if ((bitcast<u32>(c) & 0x7fffffffu) > 0x7f800000u) { return s - 1.0; }
    if (p.padding == 2u) {
        if (!finite(c)) { return s - 1.0; }
        c = select(reflect(c, -1.0, 2.0 * s - 1.0), reflect(c, 0.0, 2.0 * (s - 1.0)), p.align != 0u);
    }
    return clamp(c, 0.0, s - 1.0);
}

fn tap(base: u32, x: i32, y: i32) -> f32 {
    if (x < 0 || y < 0 || x >= i32(p.W) || y >= i32(p.H)) { return 0.0; }
    return ldx_f32(base + u32(y) * p.sxh + u32(x) * p.sxw);
}

// PyTorch's compute_coordinates for one bicubic tap (a finite coordinate).
fn pad_coord(c: f32, size: u32) -> f32 {
    let s = f32(size);
    var v = c;
    if (p.padding == 2u) { v = select(reflect(v, -1.0, 2.0 * s - 1.0), reflect(v, 0.0, 2.0 * (s - 1.0)), p.align != 0u); }
    if (p.padding != 0u) { v = clamp(v, 0.0, s - 1.0); }
    return v;
}

fn unnormalize(c: f32, size: u32) -> f32 {
    let s = f32(size);
    let v = select(((c + 1.0) * s - 1.0) / 2.0, ((c + 1.0) / 2.0) * (s - 1.0), p.align != 0u);
    return select(-100.0, v, finite(v));
}

// Bicubic grid sample: the 4 x 4 neighbours, each padded on its own, Keys' weights in x then y.
fn bicubic_sample(base: u32, gx: f32, gy: f32) -> f32 {
    let ix = unnormalize(gx, p.W);
    let iy = unnormalize(gy, p.H);
    let x0 = floor(ix);
    let y0 = floor(iy);
    let tx = ix - x0;
    let ty = iy - y0;
    let wx = vec4<f32>(cubic2(tx + 1.0), cubic1(tx), cubic1(1.0 - tx), cubic2(2.0 - tx));
    let wy = vec4<f32>(cubic2(ty + 1.0), cubic1(ty), cubic1(1.0 - ty), cubic2(2.0 - ty));
    let xs = vec4<i32>(i32(pad_coord(x0 - 1.0, p.W)), i32(pad_coord(x0, p.W)), i32(pad_coord(x0 + 1.0, p.W)),
                       i32(pad_coord(x0 + 2.0, p.W)));
    var acc = 0.0;
    for (var j = 0; j < 4; j = j + 1) {
        let yy = i32(pad_coord(y0 - 1.0 + f32(j), p.H));
        let row = wx.x * tap(base, xs.x, yy) + wx.y * tap(base, xs.y, yy) + wx.z * tap(base, xs.z, yy) +
                  wx.w * tap(base, xs.w, yy);
        acc = acc + wy[j] * row;
    }
    return acc;
}

fn grid_one(e: u32) -> CT {
    let per = p.OH * p.OW;
    let plane = e / per;
    let r = e % per;
    let oh = r / p.OW;
    let ow = r % p.OW;
    let n = plane / p.C;
    let base = p.off_x + plane_index(p.simple, p.plane_stride, p.lead, plane);
    let g = p.off_g + n * p.sgn + oh * p.sgh + ow * p.sgw;
    if (p.mode == 2u) { return ct_of(bicubic_sample(base, ldg(g), ldg(g + p.sgc))); }
    let ix = source_index(ldg(g), p.W);
    let iy = source_index(ldg(g + p.sgc), p.H);
    if (p.mode == 1u) { return ct_of(tap(base, i32(round(ix)), i32(round(iy)))); }
    let x0 = floor(ix);
    let y0 = floor(iy);
    let fx = vec2<f32>(x0 + 1.0 - ix, ix - x0);
    let fy = vec2<f32>(y0 + 1.0 - iy, iy - y0);
    let xi = i32(x0);
    let yi = i32(y0);
    return ct_of(fy.x * fx.x * tap(base, xi, yi) + fy.x * fx.y * tap(base, xi + 1, yi) +
              fy.y * fx.x * tap(base, xi, yi + 1) + fy.y * fx.y * tap(base, xi + 1, yi + 1));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * groups.x) * WG + lid;
    let e0 = w * PACK;
    if (e0 >= p.n) { return; }
    var vals: array<CT, 4>;
    for (var k = 0u; k < PACK; k = k + 1u) {
        let e = e0 + k;
        if (e < p.n) {
            if (p.op == 1u) { vals[k] = grid_one(e); } else { vals[k] = interp_one(e); }
        }
    }
    st(p.out_w0 + w, vals);
}
