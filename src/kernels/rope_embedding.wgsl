// Embedding gather: out[i, d] = weight[ids[i], d] into a contiguous output [ids..., D], one whole
// output word (PACK elements) per invocation. An id outside [0, V) gives a row of zeros (the op
// cannot fail once recorded; PyTorch raises). The prelude supplies lib_index.wgsl, PACK, CO, the
// loaders ldw (weight) and ldi (ids, i32) and the storer st.

struct Params {
    n: u32,      // output elements
    D: u32,
    V: u32,
    off_w: u32,
    off_i: u32,
    sw0: u32,    // weight strides
    sw1: u32,
    pad: u32,
    li: Layout,  // ids
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> weight: array<u32>;
@group(0) @binding(2) var<storage, read> ids: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * groups.x) * WG + lid;
    let first = w * PACK;
    if (first >= p.n) { return; }
    var v: array<CO, 4>;
    for (var k = 0u; k < PACK; k++) {
        let j = first + k;
        if (j < p.n) {
            let row = j / p.D;
            let d = j % p.D;
            let id = ldi(layout_index(p.li, row) + p.off_i);
            if (id >= 0 && u32(id) < p.V) { v[k] = CO(ldw(p.off_w + u32(id) * p.sw0 + d * p.sw1)); }
            else { v[k] = CO(0); }
        }
    }
    st(w, v);
}
