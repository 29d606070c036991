// dst[view] = src (same shape; both 4-byte dtypes, or 16-bit pairs when WORDS_PER_ELEM is 1 and the
// prelude's conversion packs two): one invocation per destination word. The prelude supplies
// lib_index.wgsl and `fn convert(w: u32) -> u32`.
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
        dst[layout_index(p.ldst, j) + p.off_dst] = convert(src[layout_index(p.lsrc, j) + p.off_src]);
    }
}
