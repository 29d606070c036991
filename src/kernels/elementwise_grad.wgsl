// The gradient of an activation in one pass (src/autograd/grad_elementwise.c, WGT_ACT_GRAD=fused,
// the default; src/ops/elementwise_grad.c runs it): dx = g f'(x), for
//   op 0 gelu_tanh: t = tanh((x (a x^2 + 1)) k), f' = (t + 1) 0.5 + (x (1 - t^2)) ((3a x^2 + 1) k / 2)
//   op 1 silu:      s = 1 / (1 + exp(-x)), f' = s (x (1 - s) + 1)
// in the composed form's order of operations (its dozen elementwise passes, each rounded to f32
// as here); the constants come from the host as that form's f32 scalars. Contiguous f32, one
// element an invocation. The prelude (src/ops/elementwise_grad.c) supplies `const WG: u32`.

struct Params {
    n: u32,
    op: u32,
    off_x: u32,   // element offsets of this dispatch's range in x, g and out
    off_g: u32,
    off_o: u32,
    a: f32,       // gelu_tanh: a, k, 3a, k / 2
    k: f32,
    a3: f32,
    k2: f32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<f32>;
@group(0) @binding(2) var<storage, read> gs: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

fn derivative(x: f32) -> f32 {
    if (p.op == 0u) {
        let x2 = x * x;
        let u = (x * (x2 * p.a + 1.0)) * p.k;
        var t = u;
        if (!is_nan(u)) { t = tanh(u); } // llvmpipe's GL drops NaN (the unary kernel's guard)
        let sech2 = 1.0 - t * t;
        let inner = (x2 * p.a3 + 1.0) * p.k2;
        return (t + 1.0) * 0.5 + (x * sech2) * inner;
    }
    let s = 1.0 / (1.0 + exp(-x));
    return s * (x * (1.0 - s) + 1.0);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * WG;
    if (i >= p.n) { return; }
    out[p.off_o + i] = gs[p.off_g + i] * derivative(xs[p.off_x + i]);
}
