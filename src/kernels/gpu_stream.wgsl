// y = x * a + b over n vec4s: the streaming kernel of the self-check and the bandwidth benchmark.
// Each invocation handles ITEMS vec4s, WG apart, so a workgroup reads ITEMS * WG * 16 bytes in
// coalesced rows; the benchmark tries several values (an override constant: one pipeline each).
// WG, the workgroup size, is 256 unless the device allows fewer invocations (compatibility
// mode's default limit is 128): src/gpu/selfcheck.c sets it.
struct Params {
    n: u32,     // vec4 elements
    a: f32,
    b: f32,
    pad: u32,
};

override ITEMS: u32 = 4u;
override WG: u32 = 256u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let base = (wid.x + wid.y * groups.x) * (WG * ITEMS) + lid;
    for (var k = 0u; k < ITEMS; k++) {
        let i = base + k * WG;
        if (i < p.n) {
            y[i] = x[i] * p.a + p.b;
        }
    }
}
