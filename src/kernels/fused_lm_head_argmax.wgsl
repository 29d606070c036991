// The greedy argmax's last stage (src/ops/fused_lm_head.c): one workgroup reads the p.n partial results
// (bits of the value, row) that fused_lm_head.wgsl's workgroups wrote and writes the first largest's row
// (NaN counts as the largest; a part of row 2^32 - 1 is empty) to tok[p.off_o] as an i32.
// The prelude supplies WG and lib_lm_head.wgsl's "best" section.

struct Params { n: u32, off_o: u32, pad0: u32, pad1: u32 };

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> tok: array<i32>;

@compute @workgroup_size(WG)
fn parts(@builtin(local_invocation_index) lid: u32) {
    var bv = 0.0;
    var bi = 0xffffffffu; // none yet
    for (var i = lid; i < p.n; i += WG) {
        let q = part[i];
        let v = bitcast<f32>(q.x);
        if (better(v, q.y, bv, bi)) { bv = v; bi = q.y; }
    }
    let b = best_of_group(lid, bv, bi);
    if (lid == 0u) { tok[p.off_o] = i32(b.y); }
}
