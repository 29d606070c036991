// Stream compaction for masked_select and nonzero: the positions (row-major over the iteration
// shape) of the set elements of a mask, in order.
//   count:   counts[g] = set elements in block g (BLOCK = 4 * WG elements: 4 per invocation)
//   (the host reads the counts back, turns them into exclusive offsets and the total, and
//    uploads the offsets: the result's length must be known on the host to allocate it)
//   compact: pos[offsets[g] + rank within the block] = position, by a workgroup prefix sum
//   coords:  nonzero's i64 [total, ndim] coordinates from pos
// The prelude (src/ops/index.c) supplies lib_index.wgsl, `const WG: u32` (the device's workgroup
// size, a power of two) and ld_mask(i) -> bool for binding `ib`.

struct Params {
    n: u32,          // iteration elements
    off_m: u32,      // element offset of the mask within its binding
    nd: u32,         // coords: dims of the iteration shape
    total: u32,      // coords: set elements
    lm: Layout,      // the mask by iteration position (its shape is the iteration shape, right-aligned)
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ib: array<u32>;
@group(0) @binding(2) var<storage, read_write> counts: array<u32>;
@group(0) @binding(3) var<storage, read_write> pos: array<u32>;
@group(0) @binding(4) var<storage, read_write> coords: array<u32>;

const BLOCK: u32 = 4u * WG;

var<workgroup> scan: array<u32, WG>;

fn group_index(wid: vec3<u32>, groups: vec3<u32>) -> u32 { return wid.x + wid.y * groups.x; }

fn is_set(j: u32) -> bool { return j < p.n && ld_mask(layout_index(p.lm, j) + p.off_m); }

fn bits4(base: u32) -> u32 {
    var b = 0u;
    for (var k = 0u; k < 4u; k = k + 1u) { if (is_set(base + k)) { b = b | (1u << k); } }
    return b;
}

// Inclusive prefix sum of v over the workgroup (Hillis-Steele in shared memory).
fn workgroup_scan(lid: u32, v: u32) -> u32 {
    scan[lid] = v;
    workgroupBarrier();
    for (var off = 1u; off < WG; off = off * 2u) {
        var t = 0u;
        if (lid >= off) { t = scan[lid - off]; }
        workgroupBarrier();
        scan[lid] = scan[lid] + t;
        workgroupBarrier();
    }
    return scan[lid];
}

@compute @workgroup_size(WG)
fn count_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wid, groups);
    let b = bits4(g * BLOCK + lid * 4u);
    let total = workgroup_scan(lid, countOneBits(b));
    if (lid == WG - 1u && g * BLOCK < p.n) { counts[g] = total; } // the grid may have spare groups
}

@compute @workgroup_size(WG)
fn compact_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wid, groups);
    let base = g * BLOCK + lid * 4u;
    let b = bits4(base);
    let c = countOneBits(b);
    let prefix = workgroup_scan(lid, c) - c;
    if (g * BLOCK >= p.n) { return; } // a spare group of the grid (after the barriers)
    var at = counts[g] + prefix;
    for (var k = 0u; k < 4u; k = k + 1u) {
        if ((b & (1u << k)) != 0u) { pos[at] = base + k; at = at + 1u; }
    }
}

@compute @workgroup_size(WG)
fn coords_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let t = group_index(wid, groups) * WG + lid;
    if (t >= p.total * p.nd) { return; }
    let k = t / p.nd;
    let slot = 8u - p.nd + t % p.nd;
    var rem = pos[k];
    var c = 0u;
    for (var d = 7u; d >= slot && d < 8u; d = d - 1u) {
        let n = p.lm.shape[d >> 2u][d & 3u];
        c = rem % n;
        rem = rem / n;
    }
    coords[2u * t] = c;
    coords[2u * t + 1u] = 0u;
}
