// One optimizer step over one chunk of one parameter tensor (src/autograd/optim.c), torch.optim's
// single-tensor algorithms in f32 with torch's order of operations (the reference and the formulas
// are in src/cpu/optim.c). The prelude defines the storage variant:
//   const WG: u32          workgroup size
//   const P_DT: u32        the parameter's dtype: 0 f32, 1 f16, 2 bf16 (halves: the f32 master is
//                          the last state slot and the half tensor gets it rounded to nearest even)
//   const G_DT: u32        the gradient's dtype, same numbering
// The algorithm (kind, momentum, nesterov, amsgrad, state slots) is read from the uniform: its
// branches are uniform, and compiling a pipeline per combination cost lavapipe seconds each.
// An f32 parameter takes one element per invocation. A half parameter takes one 32-bit word (two
// elements) per invocation, so no two invocations write one word; a word half outside the chunk is
// written back unchanged. State: f32 words, element i's slots side by side at i * slots.

struct Params {
    lr: f32,
    wd: f32,
    momentum: f32,
    damp1: f32,     // 1 - dampening
    w1: f32,        // 1 - beta1
    beta2: f32,
    w2: f32,        // 1 - beta2
    eps: f32,
    step_size: f32, // lr / (1 - beta1^t)
    bc2_sqrt: f32,  // sqrt(1 - beta2^t)
    decay: f32,     // AdamW: 1 - lr * weight_decay
    first: u32,     // SGD: the parameter's first step
    n: u32,         // elements in this chunk
    off_p: u32,     // element index of the chunk's first parameter element in binding P
    off_g: u32,     // same in G
    off_s: u32,     // word index of the chunk's first state word in binding S
    kind: u32,      // 0 SGD, 1 Adam, 2 AdamW
    flags: u32,     // 1: SGD momentum buffer, 2: nesterov, 4: amsgrad
    slots: u32,     // state words per element
    pad: u32,
};

// By the bits: a compiler may assume x != x is false (Vulkan's SPIR-V path folds it here).
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }

@group(0) @binding(0) var<uniform> u: Params;
@group(0) @binding(1) var<storage, read_write> P: array<u32>;
@group(0) @binding(2) var<storage, read> G: array<u32>;
@group(0) @binding(3) var<storage, read_write> S: array<f32>;

fn load_half(w: u32, hi: bool, dt: u32) -> f32 {
    let h = select(w & 0xffffu, w >> 16u, hi);
    if (dt == 2u) { return bitcast<f32>(h << 16u); }
    return unpack2x16float(h).x;
}

fn grad(i: u32) -> f32 {
    let e = u.off_g + i;
    if (G_DT == 0u) { return bitcast<f32>(G[e]); }
    return load_half(G[e >> 1u], (e & 1u) == 1u, G_DT);
}

// torch's lerp: exact at both ends of the weight range
fn lerp_t(a: f32, b: f32, w: f32) -> f32 {
    if (abs(w) < 0.5) { return a + w * (b - a); }
    return b - (b - a) * (1.0 - w);
}

// torch.maximum: NaN propagates (WGSL's max may drop it)
fn maximum_t(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) { return a + b; }
    return max(a, b);
}

// The update of element i (local to the chunk) whose value is x; returns the new value.
fn update(i: u32, x0: f32) -> f32 {
    let s = u.off_s + i * u.slots;
    var x = x0;
    var g = grad(i);
    if (u.kind == 0u) {
        if (u.wd != 0.0) { g = g + u.wd * x; }
        if ((u.flags & 1u) != 0u) {
            var b = g;
            if (u.first == 0u) { b = S[s] * u.momentum + u.damp1 * g; }
            S[s] = b;
            if ((u.flags & 2u) != 0u) { g = g + u.momentum * b; } else { g = b; }
        }
        x = x + -u.lr * g;
    } else {
        if (u.kind == 2u) { x = x * u.decay; } else if (u.wd != 0.0) { g = g + u.wd * x; }
        let m = lerp_t(S[s], g, u.w1);
        S[s] = m;
        var v = S[s + 1u] * u.beta2;
        v = v + (u.w2 * g) * g;
        S[s + 1u] = v;
        if ((u.flags & 4u) != 0u) {
            v = maximum_t(S[s + 2u], v);
            S[s + 2u] = v;
        }
        let denom = sqrt(v) / u.bc2_sqrt + u.eps;
        x = x + (-u.step_size * m) / denom;
    }
    return x;
}

fn round_bf16(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) > 0x7f800000u) { return (b >> 16u) | 0x40u; }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

fn to_half(x: f32) -> u32 {
    if (P_DT == 2u) { return round_bf16(x); }
    return pack2x16float(vec2<f32>(x, 0.0)) & 0xffffu;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = (wid.x + wid.y * groups.x) * WG + lid;
    if (P_DT == 0u) {
        if (t >= u.n) { return; }
        P[u.off_p + t] = bitcast<u32>(update(t, bitcast<f32>(P[u.off_p + t])));
        return;
    }
    // word t of the chunk's words: elements 2 * (off_p / 2 + t) + h, local index minus off_p
    let word = (u.off_p >> 1u) + t;
    let e0 = word * 2u;
    if (e0 >= u.off_p + u.n) { return; }
    var w = P[word];
    for (var h = 0u; h < 2u; h++) {
        let e = e0 + h;
        if (e < u.off_p || e >= u.off_p + u.n) { continue; }
        let i = e - u.off_p;
        let ms = u.off_s + i * u.slots + u.slots - 1u;
        let x = update(i, S[ms]);
        S[ms] = x;
        let sh = h * 16u;
        w = (w & ~(0xffffu << sh)) | (to_half(x) << sh);
    }
    P[word] = w;
}
