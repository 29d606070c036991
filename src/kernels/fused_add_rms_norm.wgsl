// The residual add and the RMSNorm after it, in one pass per row (f32, contiguous rows; offsets
// in elements): sum = a + b, out = sum * w / sqrt(mean(sum^2) + eps). One workgroup per row.

struct Params {
    rows: u32,
    D: u32,
    off_a: u32,
    off_b: u32,
    off_w: u32,
    off_s: u32,
    off_o: u32,
    eps: f32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> w: array<f32>;
@group(0) @binding(4) var<storage, read_write> sum: array<f32>;
@group(0) @binding(5) var<storage, read_write> o: array<f32>;

var<workgroup> partial: array<f32, 128>;

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let r = wid.x + wid.y * groups.x; // uniform in the workgroup: the barriers stay uniform
    let live = r < p.rows;
    let base = r * p.D;
    var acc = 0.0;
    if (live) {
        for (var j = lid; j < p.D; j += 128u) {
            let s = a[p.off_a + base + j] + b[p.off_b + base + j];
            sum[p.off_s + base + j] = s;
            acc += s * s;
        }
    }
    partial[lid] = acc;
    workgroupBarrier();
    for (var k = 64u; k > 0u; k >>= 1u) {
        if (lid < k) { partial[lid] += partial[lid + k]; }
        workgroupBarrier();
    }
    if (!live) { return; }
    let scale = inverseSqrt(partial[0] / f32(p.D) + p.eps);
    for (var j = lid; j < p.D; j += 128u) { // each invocation reads back only what it wrote
        o[p.off_o + base + j] = sum[p.off_s + base + j] * scale * w[p.off_w + j];
    }
}
