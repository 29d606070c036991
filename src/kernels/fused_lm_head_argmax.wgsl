// The greedy argmax's last stage (src/ops/fused_lm_head.c): one workgroup reads the p.n partial results
// (bits of the value, row) that fused_lm_head.wgsl's workgroups wrote and writes the first largest's row
// (NaN counts as the largest; a part of row 2^32 - 1 is empty) to tok[p.off_o] as an i32.
// The prelude supplies WG.

struct Params { n: u32, off_o: u32, pad0: u32, pad1: u32 };

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> tok: array<i32>;

var<workgroup> bval: array<f32, WG>;
var<workgroup> bidx: array<u32, WG>;

fn is_nan_f(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
fn better(v: f32, i: u32, bv: f32, bi: u32) -> bool {
    let vn = is_nan_f(v);
    let bn = is_nan_f(bv);
    if (i == 0xffffffffu || bi == 0xffffffffu) { return bi == 0xffffffffu && i != bi; } // none yet
    if (vn || bn) { return vn && (!bn || i < bi); }
    return v > bv || (v == bv && i < bi);
}

@compute @workgroup_size(WG)
fn parts(@builtin(local_invocation_index) lid: u32) {
    var bv = 0.0;
    var bi = 0xffffffffu; // none yet
    for (var i = lid; i < p.n; i += WG) {
        let q = part[i];
        let v = bitcast<f32>(q.x);
        if (better(v, q.y, bv, bi)) { bv = v; bi = q.y; }
    }
    bval[lid] = bv;
    bidx[lid] = bi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s && better(bval[lid + s], bidx[lid + s], bval[lid], bidx[lid])) {
            bval[lid] = bval[lid + s];
            bidx[lid] = bidx[lid + s];
        }
        workgroupBarrier();
    }
    if (lid == 0u) { tok[p.off_o] = i32(bidx[0]); }
}
