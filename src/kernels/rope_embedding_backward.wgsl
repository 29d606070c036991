// Embedding backward without atomics (src/ops/rope.c, op_embedding_backward): dW[v, d] = the sum of
// g[i, d] over the positions i whose id is v, added in position order, so every run gives the same
// bits. The ids come sorted (stable: equal ids keep their positions' order) with perm, the
// positions they came from. One invocation per (sorted position, d); the first of each run of an
// id sums the run and writes its row, the others return. dW is zero beforehand (rows no id reads
// stay zero); an id outside [0, V) is skipped, as the forward gave it a row of zeros.

struct Params {
    n: u32,      // positions
    D: u32,
    V: u32,
    off_s: u32,  // element offsets of the sorted ids, perm and g within their bindings
    off_p: u32,
    off_g: u32,
    pad0: u32,
    pad1: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> sid: array<i32>;
@group(0) @binding(2) var<storage, read> perm: array<i32>;
@group(0) @binding(3) var<storage, read> g: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = (wid.x + wid.y * groups.x) * WG + lid;
    if (t >= p.n * p.D) { return; }
    let i = t / p.D;
    let d = t % p.D;
    let id = sid[p.off_s + i];
    if (i > 0u && sid[p.off_s + i - 1u] == id) { return; }
    if (id < 0 || u32(id) >= p.V) { return; }
    var s = 0.0;
    var j = i;
    loop {
        if (j >= p.n || sid[p.off_s + j] != id) { break; }
        s = s + g[p.off_g + u32(perm[p.off_p + j]) * p.D + d];
        j = j + 1u;
    }
    out[u32(id) * p.D + d] = s;
}
