// dst[view] = src, word for word (same shape; both 4-byte dtypes, or views of 16-bit pairs taken as
// whole words): one invocation per destination word. The prelude supplies lib_index.wgsl and
// `const WG: u32`.
struct Params {
    n: u32,         // words to write
    off_dst: u32,   // element offsets within the bindings, in words
    off_src: u32,
    pad: u32,
    ldst: Layout,   // layouts in words
    lsrc: Layout,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let j = (wid.x + wid.y * groups.x) * WG + lid;
    if (j < p.n) {
        dst[layout_index(p.ldst, j) + p.off_dst] = src[layout_index(p.lsrc, j) + p.off_src];
    }
}
