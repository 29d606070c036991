// Pooling over [H, W] planes (a 1-D pool is a [1, W] plane): max, average, adaptive max and
// adaptive average. One invocation writes one output word: PACK consecutive output elements (and
// their indices when the max pools return them), each walking its window directly.
// The prelude (src/ops/pool.c) supplies lib_index.wgsl, `alias CT` (f32, i32, u32, or vec2<u32>:
// an exact i64 from lib_i64.wgsl), `const PACK: u32`, `fn ldx(i: u32) -> CT` over binding xs,
// `fn st(w: u32, v: array<CT, 4>)` over binding out, lib_ct.wgsl's section for CT (is_nan_ct;
// ct_gt, signed on i64 words; ct_f32 / ct_of, to and from f32, for the averages, which take floats
// only) and lib_index_out.wgsl's `fn st_idx(i: u32, v: u32)` (a no-op, or a store into binding 3
// when indices are wanted).

struct Params {
    n: u32,        // output elements of this dispatch
    out_w0: u32,   // its first output word within the out binding
    idx0: u32,     // its first index element within the idx binding
    off_x: u32,    // element offset of the input's first plane within the xs binding
    kind: u32,     // 0 max, 1 avg, 2 adaptive max, 3 adaptive avg
    H: u32, W: u32, OH: u32,
    OW: u32, sxh: u32, sxw: u32, kh: u32,
    kw: u32, sh: u32, sw: u32, ph: u32,
    pw: u32, dh: u32, dw: u32, cip: u32,   // cip: count_include_pad
    divisor: u32,  // > 0: divisor_override
    simple: u32,   // 1: the batch dims walk with one stride, plane_stride
    plane_stride: u32,
    pad2: u32,
    lead: Layout,  // the batch dims of the input (this dispatch's part)
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

struct Res { v: CT, i: u32 };

// The window [lo, hi) of output position o along a dim of input size n and output size m.
fn window(o: u32, n: u32, m: u32, k: u32, s: u32, pd: u32, d: u32) -> vec2<i32> {
    if (p.kind >= 2u) { return vec2<i32>(i32((o * n) / m), i32(((o + 1u) * n + m - 1u) / m)); }
    let lo = i32(o * s) - i32(pd);
    return vec2<i32>(lo, lo + i32((k - 1u) * d + 1u));
}

fn pool_one(e: u32) -> Res {
    let per = p.OH * p.OW;
    let plane = e / per;
    let r = e % per;
    let oh = r / p.OW;
    let ow = r % p.OW;
    let base = p.off_x + plane_index(p.simple, p.plane_stride, p.lead, plane);
    let wh = window(oh, p.H, p.OH, p.kh, p.sh, p.ph, p.dh);
    let ww = window(ow, p.W, p.OW, p.kw, p.sw, p.pw, p.dw);
    let H = i32(p.H);
    let W = i32(p.W);
    if (p.kind == 0u || p.kind == 2u) {
        let dh = select(1, i32(p.dh), p.kind == 0u);
        let dw = select(1, i32(p.dw), p.kind == 0u);
        // the first in-range tap of each dim (PyTorch's starting index)
        var a0 = wh.x;
        if (a0 < 0) { a0 = a0 + ((-a0 + dh - 1) / dh) * dh; }
        var c0 = ww.x;
        if (c0 < 0) { c0 = c0 + ((-c0 + dw - 1) / dw) * dw; }
        let a1 = min(wh.y, H);
        let c1 = min(ww.y, W);
        var res = Res(CT(0), u32(a0 * W + c0));
        var first = true;
        for (var ih = a0; ih < a1; ih = ih + dh) {
            for (var iw = c0; iw < c1; iw = iw + dw) {
                let v = ldx(base + u32(ih) * p.sxh + u32(iw) * p.sxw);
                if (first || ct_gt(v, res.v) || is_nan_ct(v)) { res = Res(v, u32(ih * W + iw)); }
                first = false;
            }
        }
        return res;
    }
    // average: PyTorch's divisor counts the window clipped to the padded input
    let pool_size = (min(wh.y, H + i32(p.ph)) - wh.x) * (min(ww.y, W + i32(p.pw)) - ww.x);
    let a0 = max(wh.x, 0);
    let a1 = min(wh.y, H);
    let c0 = max(ww.x, 0);
    let c1 = min(ww.y, W);
    if (a0 >= a1 || c0 >= c1) { return Res(CT(0), 0u); }
    var sum = 0.0;
    for (var ih = a0; ih < a1; ih = ih + 1) {
        let row = base + u32(ih) * p.sxh;
        for (var iw = c0; iw < c1; iw = iw + 1) { sum = sum + ct_f32(ldx(row + u32(iw) * p.sxw)); }
    }
    var div = f32((a1 - a0) * (c1 - c0));
    if (p.kind == 1u) {
        if (p.divisor > 0u) { div = f32(p.divisor); } else if (p.cip != 0u) { div = f32(pool_size); }
    }
    return Res(ct_of(sum / div), 0u);
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
            let r = pool_one(e);
            vals[k] = r.v;
            st_idx(p.idx0 + e, r.i);
        }
    }
    st(p.out_w0 + w, vals);
}
