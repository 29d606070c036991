// Elementwise ops over contiguous tensors of packed dtypes (f16, bf16, 8-bit, or inputs whose
// element size differs from the output's) at memory speed. Every input is either laid out like
// the output from a 16-byte boundary of its binding (any element size), or one element broadcast
// to all (S0..S2 true). Each output vec4<u32> (a "unit": 16 bytes, 8 halves, 16 bytes of 8-bit
// elements, or 4 words) is computed by unit(v, c0, c1, c2), generated straight-line by
// src/ops/elementwise.c: it loads each input's words for the unit as whole vec4s (or the vec2 /
// word of a narrower input), unpacks them with constant swizzles (unpack2x16float, shifts), calls
// compute() per element and packs the results back (pack2x16float, bf16 rounding) into one
// 16-byte store. No private variables are indexed and no element is fetched twice. The broadcast
// inputs are loaded once per invocation by sc0..sc2() (CI(0) for the others). Each invocation
// handles ITEMS units, WG apart, as elementwise_vec.wgsl does.

@group(0) @binding(1) var<storage, read> in0: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> in1: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> in2: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<u32>>;

const ITEMS: u32 = 4u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let first = (wid.x + wid.y * groups.x) * (WG * ITEMS) + lid;
    let words = (p.n + PACK - 1u) / PACK;   // output words
    let nvec = (words + 3u) / 4u;
    let c0 = sc0();
    let c1 = sc1();
    let c2 = sc2();
    for (var u = 0u; u < ITEMS; u = u + 1u) {
        let v = first + u * WG;
        if (v >= nvec) {
            return;
        }
        let r = unit(v, c0, c1, c2);
        let o = v + p.offo;
        if (v * 4u + 4u <= words) {
            out[o] = r;
        } else { // the last, partial vec4: only the words of the tensor
            for (var c = 0u; v * 4u + c < words; c = c + 1u) { out[o][c] = r[c]; }
        }
    }
}
