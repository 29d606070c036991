// Elementwise ops over contiguous tensors at memory speed: every input is either laid out like the
// output (contiguous, from a vec4 boundary of its binding, elements of the output's size), or one
// element broadcast to all (S0..S2 true), or contiguous with elements of another size or from an
// unaligned start (M0..M2 true: the vec4 holding each element is fetched per element, a cast). Loads and stores are whole vec4<u32>s (16 bytes: 4 f32,
// 8 f16/bf16, 16 8-bit elements); each invocation handles ITEMS of them, WG apart, so a workgroup
// streams WG * ITEMS * 16 contiguous bytes per tensor. The prelude (src/ops/elementwise.c)
// supplies elementwise_ops.wgsl, aliases and constants, E0..E2 (elements per vec4 of each input),
// the loaders lv0..lv2 of element i of the private words w0..w2, and the storer sv(c, v) of word
// c of the private output words wo.

@group(0) @binding(1) var<storage, read> in0: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> in1: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> in2: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<u32>>;

const ITEMS: u32 = 4u;

var<private> w0: vec4<u32>;
var<private> w1: vec4<u32>;
var<private> w2: vec4<u32>;
var<private> wo: vec4<u32>;

// Element e of output vec4 v from input 0, 1 or 2.
fn arg0(v: u32, e: u32) -> CI {
    if (M0) { let g = v * 4u * PACK + e + p.off0; w0 = in0[g / E0]; return lv0(g % E0); }
    return lv0(select(e, p.off0 % E0, S0));
}
fn arg1(v: u32, e: u32) -> CI {
    if (M1) { let g = v * 4u * PACK + e + p.off1; w1 = in1[g / E1]; return lv1(g % E1); }
    return lv1(select(e, p.off1 % E1, S1));
}
fn arg2(v: u32, e: u32) -> CI {
    if (M2) { let g = v * 4u * PACK + e + p.off2; w2 = in2[g / E2]; return lv2(g % E2); }
    return lv2(select(e, p.off2 % E2, S2));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let first = (wid.x + wid.y * groups.x) * (WG * ITEMS) + lid;
    let words = (p.n + PACK - 1u) / PACK;   // output words
    let nvec = (words + 3u) / 4u;
    // a broadcast element sits at its element offset within the first vec4 fetched
    if (S0) { w0 = in0[p.off0 / E0]; }
    if (S1) { w1 = in1[p.off1 / E1]; }
    if (S2) { w2 = in2[p.off2 / E2]; }
    for (var u = 0u; u < ITEMS; u = u + 1u) {
        let v = first + u * WG;
        if (v >= nvec) {
            return;
        }
        if (!S0 && !M0) { w0 = in0[v + p.off0 / E0]; }
        if (!S1 && !M1) { w1 = in1[v + p.off1 / E1]; }
        if (!S2 && !M2) { w2 = in2[v + p.off2 / E2]; }
        for (var c = 0u; c < 4u; c = c + 1u) {
            var r: array<CO, 4>;
            for (var k = 0u; k < PACK; k = k + 1u) {
                let e = c * PACK + k;
                r[k] = compute(arg0(v, e), arg1(v, e), arg2(v, e));
            }
            sv(c, r);
        }
        let o = v + p.offo;
        if (v * 4u + 4u <= words) {
            out[o] = wo;
        } else { // the last, partial vec4: only the words of the tensor
            for (var c = 0u; v * 4u + c < words; c = c + 1u) { out[o][c] = wo[c]; }
        }
    }
}
