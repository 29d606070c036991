// Elementwise losses: mse, l1, smooth_l1, huber, binary_cross_entropy (with weight),
// binary_cross_entropy_with_logits (weight, pos_weight) and kl_div, each element once, all inputs
// broadcast to the output's shape through their strides. Each invocation writes one output word
// (PACK elements). A reduced loss writes f32 values that the op sums.
// The prelude (src/ops/loss.c) supplies lib_index.wgsl, `const PACK: u32`, the loaders ldx, ldt,
// ldw, ldp (-> f32) and the storer st.

struct Params {
    n: u32,          // output elements of this dispatch
    kind: u32,       // wgt_cpu_loss
    off_x: u32,
    off_t: u32,
    off_w: u32,
    off_p: u32,
    has_w: u32,
    has_p: u32,
    param: f32,      // smooth_l1 beta, huber delta, kl_div log_target
    dense: u32,      // bit i: input i (x, target, weight, pos_weight) is laid out as the output
    first: u32,      // the first output element of this dispatch (work split over bindings)
    out_w0: u32,     // its word within the output binding
    shape: array<vec4<u32>, 2>,   // the output's shape, right-aligned in 8 slots
    sx: array<vec4<u32>, 2>,      // strides of each input broadcast to it (0 on broadcast dims)
    st: array<vec4<u32>, 2>,
    sw: array<vec4<u32>, 2>,
    sp: array<vec4<u32>, 2>,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<u32>;
@group(0) @binding(2) var<storage, read> ts: array<u32>;
@group(0) @binding(3) var<storage, read> wsb: array<u32>;
@group(0) @binding(4) var<storage, read> psb: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<u32>;

// Element j (of the whole output) of an input: dense inputs are bound from this dispatch's first.
fn at(s: array<vec4<u32>, 2>, j: u32, bit: u32) -> u32 {
    if ((p.dense & bit) != 0u) { return j - p.first; }
    var rem = j;
    var idx = 0u;
    for (var d = 7u; d < 8u; d = d - 1u) { // wraps below zero and ends
        let n = p.shape[d >> 2u][d & 3u];
        idx = idx + (rem % n) * s[d >> 2u][d & 3u];
        rem = rem / n;
    }
    return idx;
}

fn log_sigmoid(v: f32) -> f32 { return min(v, 0.0) - log(1.0 + exp(-abs(v))); }

fn loss(j: u32) -> f32 {
    let x = ldx(at(p.sx, j, 1u) + p.off_x);
    let t = ldt(at(p.st, j, 2u) + p.off_t);
    let d = x - t;
    let a = abs(d);
    switch p.kind {
        case 0u: { return d * d; }
        case 1u: { return a; }
        case 2u: {
            if (p.param == 0.0) { return a; }
            return select(a - 0.5 * p.param, 0.5 * d * d / p.param, a < p.param);
        }
        case 3u: { return select(p.param * (a - 0.5 * p.param), 0.5 * d * d, a <= p.param); }
        case 4u, 5u: {
            var w = 1.0;
            if (p.has_w != 0u) { w = ldw(at(p.sw, j, 4u) + p.off_w); }
            if (p.kind == 4u) {
                return -w * (t * max(log(x), -100.0) + (1.0 - t) * max(log(1.0 - x), -100.0));
            }
            var pw = 1.0;
            if (p.has_p != 0u) { pw = ldp(at(p.sp, j, 8u) + p.off_p); }
            return w * ((1.0 - t) * x - ((pw - 1.0) * t + 1.0) * log_sigmoid(x));
        }
        default: {
            if (p.param != 0.0) { return exp(t) * (t - x); }
            if (t == 0.0) { return 0.0 * x; }
            return t * (log(t) - x);
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let w = gid.x + gid.y * groups.x * WG;
    if (w * PACK >= p.n) { return; }
    var v: array<f32, 4>;
    for (var k = 0u; k < PACK; k = k + 1u) {
        let j = w * PACK + k;
        if (j < p.n) { v[k] = loss(p.first + j); }
    }
    st(p.out_w0 + w, v);
}
