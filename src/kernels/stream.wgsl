// y = x * a + b over n vec4s: the streaming kernel of the self-check and the bandwidth benchmark.
struct Params {
    n: u32,     // vec4 elements
    a: f32,
    b: f32,
    pad: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * groups.x) * 256u + lid;
    if (i < p.n) {
        y[i] = x[i] * p.a + p.b;
    }
}
