// Shared by strided kernels: a layout of up to 8 dims (right-aligned, unused leading dims have
// size 1) and the storage index of the element at a row-major position.
struct Layout {
    shape: array<vec4<u32>, 2>,
    strides: array<vec4<u32>, 2>,
};

fn layout_index(l: Layout, j: u32) -> u32 {
    var rem = j;
    var idx = 0u;
    for (var d = 7u; d < 8u; d = d - 1u) { // wraps below zero and ends
        let n = l.shape[d >> 2u][d & 3u];
        idx = idx + (rem % n) * l.strides[d >> 2u][d & 3u];
        rem = rem / n;
    }
    return idx;
}

// The storage index of the first element of plane j of a batch of planes (pooling, resampling):
// plane * stride when the batch dims walk with one stride (simple; op_plane_stride in
// src/ops/ops.c), else lead's strided index of j.
fn plane_index(simple: u32, stride: u32, lead: Layout, j: u32) -> u32 {
    if (simple != 0u) { return j * stride; }
    return layout_index(lead, j);
}
