// Elementwise ops of up to three strided, broadcast inputs into a contiguous output: each
// invocation writes one whole output word (PACK elements), so no two invocations share one. The
// prelude (src/ops/elementwise.c) supplies elementwise_ops.wgsl (Params, the op functions) and its
// aliases and constants, the loaders ld0..ld2 of element i of in0..in2 and the storer st(w, v).

@group(0) @binding(1) var<storage, read> in0: array<u32>;
@group(0) @binding(2) var<storage, read> in1: array<u32>;
@group(0) @binding(3) var<storage, read> in2: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * groups.x) * WG + lid;
    let first = w * PACK;
    if (first >= p.n) {
        return;
    }
    var v: array<CO, 4>;
    for (var k = 0u; k < PACK; k = k + 1u) {
        let j = first + k;
        if (j < p.n) {
            let a = ld0(layout_index(p.l0, j) + p.off0);
            let b = ld1(layout_index(p.l1, j) + p.off1);
            let c = ld2(layout_index(p.l2, j) + p.off2);
            v[k] = compute(a, b, c);
        }
    }
    st(w + p.offo, v);
}
