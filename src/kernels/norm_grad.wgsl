// Layer norm's and RMS norm's backward over rows (src/autograd/grad_norm.c, WGT_NORM_GRAD=fused,
// the default; src/ops/norm_grad.c runs it): a workgroup per row of R elements recomputes
// the row's statistics from x and writes
//   dx = rstd (gxhat - xhat mean(gxhat xhat) - [mean(gxhat)]),  gxhat = g w (g without a weight),
//   gw = g xhat (for the weight's gradient, summed over rows by the caller; when p.has_gw),
// with xhat = (x - [mean(x)]) rstd, rstd = 1 / sqrt(mean((x - [mean])^2) + eps); the bracketed
// terms for layer norm only (p.centred). The composed form is 15-20 elementwise and reduce passes.
// Rows are contiguous f32; w is f32 [R] (p.has_w). The prelude (src/ops/norm_grad.c) supplies
// `const WG: u32` (a power of two).

struct Params {
    n_rows: u32,
    R: u32,
    centred: u32,
    has_w: u32,
    has_gw: u32,
    eps: f32,
    off_x: u32,   // element offsets of this dispatch's rows in x, g and the outputs, of w
    off_g: u32,
    off_dx: u32,
    off_gw: u32,
    off_w: u32,
    pad0: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<f32>;
@group(0) @binding(2) var<storage, read> gs: array<f32>;
@group(0) @binding(3) var<storage, read> ws: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;
@group(0) @binding(5) var<storage, read_write> gw: array<f32>;

var<workgroup> sh: array<vec2<f32>, WG>;

// The workgroup's sums of v into every invocation.
fn wg_sum(v: vec2<f32>, lid: u32) -> vec2<f32> {
    sh[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) { sh[lid] = sh[lid] + sh[lid + s]; }
        workgroupBarrier();
    }
    let r = sh[0];
    workgroupBarrier();
    return r;
}

fn weight(c: u32) -> f32 {
    if (p.has_w != 0u) { return ws[p.off_w + c]; }
    return 1.0;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let r = wid.x + wid.y * groups.x;
    if (r >= p.n_rows) { return; } // uniform per workgroup
    let ix = p.off_x + r * p.R;
    let ig = p.off_g + r * p.R;
    let n = f32(p.R);
    var mean = 0.0;
    if (p.centred != 0u) {
        var s = 0.0;
        for (var c = lid; c < p.R; c = c + WG) { s = s + xs[ix + c]; }
        mean = wg_sum(vec2<f32>(s, 0.0), lid).x / n;
    }
    var q = 0.0;
    for (var c = lid; c < p.R; c = c + WG) { let d = xs[ix + c] - mean; q = q + d * d; }
    let rstd = inverseSqrt(wg_sum(vec2<f32>(q, 0.0), lid).x / n + p.eps);
    var ab = vec2<f32>(0.0);
    for (var c = lid; c < p.R; c = c + WG) {
        let gx = gs[ig + c] * weight(c);
        ab = ab + vec2<f32>(gx * ((xs[ix + c] - mean) * rstd), gx);
    }
    let m = wg_sum(ab, lid) / n; // mean(gxhat xhat), mean(gxhat)
    let io = p.off_dx + r * p.R;
    let iw = p.off_gw + r * p.R;
    for (var c = lid; c < p.R; c = c + WG) {
        let g = gs[ig + c];
        let xh = (xs[ix + c] - mean) * rstd;
        var t = g * weight(c) - xh * m.x;
        if (p.centred != 0u) { t = t - m.y; }
        dx[io + c] = rstd * t;
        if (p.has_gw != 0u) { gw[iw + c] = g * xh; }
    }
}
