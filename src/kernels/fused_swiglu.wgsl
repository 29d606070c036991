// out[r, j] = silu(x[r, j]) * x[r, D + j]: the gate and up halves of one matmul's rows (the
// fused gate/up projection of a SwiGLU MLP), f32, contiguous rows; offsets in elements.

struct Params {
    rows: u32,
    D: u32,
    off_x: u32,
    off_o: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> o: array<f32>;

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * groups.x) * 128u + lid;
    if (i >= p.rows * p.D) { return; }
    let r = i / p.D;
    let j = i - r * p.D;
    let g = x[p.off_x + r * 2u * p.D + j];
    let u = x[p.off_x + r * 2u * p.D + p.D + j];
    o[p.off_o + i] = g / (1.0 + exp(-g)) * u;
}
