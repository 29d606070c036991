// i64 arithmetic of the misc ops (src/ops/misc.c), exact and wrapping like the reference's
// int64_t: diff's differences along a dim and trace's sum of a diagonal. The prelude supplies
// lib_index.wgsl, lib_i64.wgsl, `const WG: u32`, the loader ld(i) -> vec2<u32> of binding x and
// the storer st64(w, array<vec2<u32>, 4>) of binding out.

struct Params {
    n: u32,        // diff: output elements; trace: diagonal elements
    step: u32,     // diff: x's stride along the dim; trace: the diagonal's stride (s0 + s1)
    off: u32,      // x's first element within the binding
    pad0: u32,
    l: Layout,     // diff: the output's shape with x's strides
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

// out[e] = x[e + 1 along the dim] - x[e], one element (one word pair) per invocation.
@compute @workgroup_size(WG)
fn diff(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = (wid.x + wid.y * groups.x) * WG + lid;
    if (e >= p.n) { return; }
    let a = layout_index(p.l, e) + p.off;
    var v: array<vec2<u32>, 4>;
    v[0] = i64_sub(ld(a + p.step), ld(a));
    st64(e, v);
}

var<workgroup> part: array<vec2<u32>, WG>;

// The sum of p.n elements p.step apart, by one workgroup: strided partial sums, then a tree.
@compute @workgroup_size(WG)
fn trace(@builtin(local_invocation_index) lid: u32) {
    var acc = vec2<u32>(0u, 0u);
    for (var i = lid; i < p.n; i = i + WG) { acc = i64_add(acc, ld(p.off + i * p.step)); }
    part[lid] = acc;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h / 2u) {
        if (lid < h) { part[lid] = i64_add(part[lid], part[lid + h]); }
        workgroupBarrier();
    }
    if (lid == 0u) {
        var v: array<vec2<u32>, 4>;
        v[0] = part[0];
        st64(0u, v);
    }
}
