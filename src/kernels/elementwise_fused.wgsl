// A chain of elementwise ops fused by graph capture (src/ops/elementwise_fuse.c; notes/GRAPH.md):
// the ops of elementwise.wgsl over one output shape, their intermediates kept in registers. Each
// invocation computes PACK consecutive output elements of every live output (one word each), as
// elementwise.wgsl does for one output. The prelude (generated per chain) supplies lib_index.wgsl
// and elementwise_ops.wgsl (Params: this kernel reads n and zero; the op functions), PACK and WG,
// the bindings (x0.. the chain's inputs, y0.. its live outputs, whole storages), and
//   fn stages(j: u32, k: u32): the chain at output element j (each stage one op function of
//     elementwise_ops.wgsl with its own op code and parameters in q, its inputs loaded with
//     indices computed from constant shapes and strides, or an earlier stage's value converted
//     as a store and load in that stage's dtype would), leaving each live output's value in
//     element k of its private array;
//   fn store_all(w: u32): stores word w of every live output from those arrays.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * groups.x) * WG + lid;
    let first = w * PACK;
    if (first >= p.n) {
        return;
    }
    for (var k = 0u; k < PACK; k = k + 1u) {
        let j = first + k;
        if (j < p.n) {
            stages(j, k);
        }
    }
    store_all(w);
}
