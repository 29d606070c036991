// Gradient clipping's scale (src/autograd/optim_clip.c): g *= min(1, max_norm / (total + 1e-6)),
// in place, with the total norm read from a device tensor, so the host never waits for it. The
// factor is computed as torch computes it: (1 / (total + 1e-6)) * max_norm in f32 (Python's
// max_norm / tensor is tensor.reciprocal() * max_norm), clamped at 1 with NaN kept (torch.clamp).
// Prelude: const WG: u32; const G_DT: u32 (0 f32, 1 f16, 2 bf16). A half gradient takes one word
// (two elements) per invocation; a word half outside the tensor is written back unchanged.

struct Params {
    n: u32,       // elements
    off_g: u32,   // element index of the gradient's first element in binding G
    off_t: u32,   // element index of the total norm in binding T
    max_norm: f32,
};

// By the bits: a compiler may assume x != x is false (Vulkan's SPIR-V path folds it here).
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }

@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read_write> G: array<u32>;
@group(0) @binding(2) var<storage, read> T: array<f32>;

fn coef() -> f32 {
    let c = (1.0 / (T[u.off_t] + 1e-6)) * u.max_norm;
    if (is_nan(c)) { return c; }
    return min(c, 1.0);
}

fn round_bf16(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) > 0x7f800000u) { return (b >> 16u) | 0x40u; }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = (wid.x + wid.y * groups.x) * WG + lid;
    let c = coef();
    if (G_DT == 0u) {
        if (t >= u.n) { return; }
        G[u.off_g + t] = bitcast<u32>(bitcast<f32>(G[u.off_g + t]) * c);
        return;
    }
    let word = (u.off_g >> 1u) + t;
    let e0 = word * 2u;
    if (e0 >= u.off_g + u.n) { return; }
    var w = G[word];
    for (var h = 0u; h < 2u; h++) {
        let e = e0 + h;
        if (e < u.off_g || e >= u.off_g + u.n) { continue; }
        let sh = h * 16u;
        let bits = (w >> sh) & 0xffffu;
        var r: u32;
        if (G_DT == 2u) {
            r = round_bf16(bitcast<f32>(bits << 16u) * c);
        } else {
            r = pack2x16float(vec2<f32>(unpack2x16float(bits).x * c, 0.0)) & 0xffffu;
        }
        w = (w & ~(0xffffu << sh)) | (r << sh);
    }
    G[word] = w;
}
