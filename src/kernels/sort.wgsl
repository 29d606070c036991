// Sorting (sort, argsort, topk, kthvalue, median, unique) over rows of (key, index) pairs.
//
// A row is the elements of x along the sorted dim; row r is a position over x's other dims
// (p.kept, row-major) and element j of it lives at layout_index(p.kept, r) + j * p.stride + p.off.
// Elements become keys of type KT whose unsigned order is the wanted order (floats: sign-magnitude
// flip, -0 -> +0, NaN -> p.nan_key; i64: the words (hi ^ sign bit, lo), compared high word first;
// descending: every key word complemented), carried with their position j.
// Pairs compare by key, then by position: a total order, so every network below sorts stably.
// Padding pairs are (all ones, 0xffffffff), above every real pair. Key buffers hold KW words per
// pair (kload / kstore); workgroup memory holds TILE keys and TILE positions.
//
// tile_main:   a workgroup sorts TILE pair slots in workgroup memory with a bitonic network, as
//              blocks of p.S (a power of two <= TILE) slots, one segment each: segment g is tile
//              g % p.nt of row g / p.nt (p.S elements from position (g % p.nt) * p.S). It writes the
//              first p.keep pairs of each segment, compacted: full sorts keep everything (runs of
//              p.S), topk keeps k per segment and runs again over the survivors.
// merge_main:  one step of a merge sort over rows of p.Lin pairs: runs of p.w merge pairwise, a
//              workgroup per TILE outputs (merge path, then ranks in workgroup memory).
// unpack_main: the results: output element (outer, q, inner) of x's shape with the dim of length
//              p.n_out reads pair q of row outer * p.inner + inner (or a picked position, for
//              kthvalue/median), the value gathered from x at the pair's position.
// uflag_main, ustart_main, ugather_main: unique over one sorted row (see src/ops/sort.c).
//
// The prelude (src/ops/sort.c) supplies lib_index.wgsl (and lib_i64.wgsl for i64), `const TILE`,
// `const WG` (the sorting kernels' workgroup size, TILE / WG >= 2), `const WG1` (the one-dimensional
// kernels'), `alias CT` (vec2<u32> for i64), `alias KT` (u32, or vec2<u32> for i64 keys),
// `fn ldx(i: u32) -> CT` (x), lib_sort_ops.wgsl's key functions (`fn key_of(v: CT) -> KT`,
// `fn kless(a: KT, b: KT) -> bool`, `fn keq(a: KT, b: KT) -> bool`, `fn kload(i: u32) -> KT`: key i
// of binding ka, `fn kstore(i: u32, k: KT)`: into kb), `fn stv(w: u32, v: array<CT, 4>)` (values, PACK per word)
// and `fn sti(w: u32, v: array<i32, 4>)` (indices).

struct Params {
    rows: u32,
    Lin: u32,     // tile: row length read; merge: row length
    S: u32,       // tile: segment size (a power of two <= TILE)
    nt: u32,      // tile: segments per row
    keep: u32,    // tile: pairs kept per segment
    Lout: u32,    // tile: row length written
    from_x: u32,  // tile: 1 reads x (keys made here), 0 reads pairs
    off: u32,     // element offset of x in its binding
    stride: u32,  // x's stride along the dim
    flip: u32,    // 0xffffffff: descending
    nan_key: u32, // key of NaN before the flip (0xffffffff: above +inf; 0: below -inf, median)
    w: u32,       // merge: run width
    n_out: u32,   // unpack: output length along the dim; unique: number of groups
    inner: u32,   // unpack: elements after the dim
    pick: u32,    // unpack: 0 take pairs 0..n_out-1; 1 pair p.pos; 2 pair p.pos or 0 when that is NaN
    pos: u32,
    n: u32,       // elements (unpack: output words; unique: pairs)
    Ls: u32,      // unpack: row length of the pair buffers
    is_float: u32,
    outs: u32,    // unpack/unique: outputs wanted (1 values, 2 indices/inverse/counts, 4 first)
    kept: Layout,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<u32>;
@group(0) @binding(2) var<storage, read> ka: array<u32>;
@group(0) @binding(3) var<storage, read> ia: array<u32>;
@group(0) @binding(4) var<storage, read_write> kb: array<u32>;
@group(0) @binding(5) var<storage, read_write> ib: array<u32>;
@group(0) @binding(6) var<storage, read_write> ov: array<u32>;
@group(0) @binding(7) var<storage, read_write> oi: array<u32>;

fn less(k0: KT, i0: u32, k1: KT, i1: u32) -> bool { return kless(k0, k1) || (keq(k0, k1) && i0 < i1); }

fn row_base(r: u32) -> u32 { return layout_index(p.kept, r) + p.off; }

fn flat_id(wid: vec3<u32>, nwg: vec3<u32>) -> u32 { return wid.x + wid.y * nwg.x; }

// ---- tile_main ----

var<workgroup> sk: array<KT, TILE>;
var<workgroup> si: array<u32, TILE>;

fn cas(a: u32, b: u32) {
    let ka0 = sk[a];
    let ia0 = si[a];
    let kb0 = sk[b];
    let ib0 = si[b];
    if (less(kb0, ib0, ka0, ia0)) {
        sk[a] = kb0;
        si[a] = ib0;
        sk[b] = ka0;
        si[b] = ia0;
    }
}

// Slots per invocation in the barrier-free steps (TILE / WG, a power of two >= 2).
const LOC: u32 = TILE / WG;

// The steps of a bitonic size inside the group of LOC slots at g: the flip (when flip) and the
// half-cleaners of distance < min(size / 2, LOC) (size > LOC: only the distances below LOC).
fn local_steps(g: u32, size: u32, flip: bool) {
    let half = size >> 1u;
    if (flip) {
        for (var j = 0u; j < LOC / 2u; j++) {
            let blk = g + (j / half) * size;
            let r = j % half;
            cas(blk + r, blk + size - 1u - r);
        }
    }
    for (var h = min(half, LOC) >> 1u; h > 0u; h = h >> 1u) {
        for (var j = 0u; j < LOC / 2u; j++) {
            let a = g + (j / h) * (h << 1u) + j % h;
            cas(a, a + h);
        }
    }
}

@compute @workgroup_size(WG)
fn tile_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
             @builtin(local_invocation_index) lid: u32) {
    let per = TILE / p.S;
    let g0 = flat_id(wid, nwg) * per;
    let nseg = p.rows * p.nt;
    for (var q = lid; q < TILE; q += WG) {
        let g = g0 + q / p.S;
        var k = KT(0xffffffffu);
        var i = 0xffffffffu;
        if (g < nseg) {
            let r = g / p.nt;
            let j = (g % p.nt) * p.S + q % p.S;
            if (j < p.Lin) {
                if (p.from_x != 0u) {
                    k = key_of(ldx(row_base(r) + j * p.stride)) ^ KT(p.flip);
                    i = j;
                } else {
                    k = kload(r * p.Lin + j);
                    i = ia[r * p.Lin + j];
                }
            }
        }
        sk[q] = k;
        si[q] = i;
    }
    workgroupBarrier();
    // Bitonic sort of every block of p.S slots, ascending: for each size, a flip step (slot a
    // against its mirror in the size-block) then half-cleaners of shrinking distance. Steps whose
    // pairs stay inside an aligned group of LOC slots run in one invocation (its own group) without
    // barriers between them: all steps of sizes up to LOC, and the last log2(LOC) of larger sizes.
    let grp = lid * LOC;
    for (var size = 2u; size <= min(p.S, LOC); size = size << 1u) {
        local_steps(grp, size, true);
    }
    workgroupBarrier();
    for (var size = LOC << 1u; size <= p.S; size = size << 1u) {
        let half = size >> 1u;
        for (var q = lid; q < TILE / 2u; q += WG) {
            let blk = (q / half) * size;
            let r = q % half;
            cas(blk + r, blk + size - 1u - r);
        }
        workgroupBarrier();
        for (var h = half >> 1u; h >= LOC; h = h >> 1u) {
            for (var q = lid; q < TILE / 2u; q += WG) {
                let a = (q / h) * (h << 1u) + q % h;
                cas(a, a + h);
            }
            workgroupBarrier();
        }
        local_steps(grp, LOC << 1u, false);
        workgroupBarrier();
    }
    for (var q = lid; q < TILE; q += WG) {
        let g = g0 + q / p.S;
        let s = q % p.S;
        if (g >= nseg || s >= p.keep) { continue; }
        let r = g / p.nt;
        let t = g % p.nt;
        if (t * p.S + s >= p.Lin) { continue; } // past the row's end: padding
        let o = r * p.Lout + t * p.keep + s;
        kstore(o, sk[q]);
        ib[o] = si[q];
    }
}

// ---- merge_main ----

// How many of the first d outputs of merging runs A (at a0, na pairs) and B (at b0, nb) come from
// A: the merge path's split on diagonal d, a binary search in global memory.
fn split(a0: u32, na: u32, b0: u32, nb: u32, d: u32) -> u32 {
    var lo = select(0u, d - nb, d > nb);
    var hi = min(d, na);
    while (lo < hi) {
        let mid = (lo + hi) >> 1u;
        let j = b0 + d - mid - 1u;
        if (less(kload(a0 + mid), ia[a0 + mid], kload(j), ia[j])) { lo = mid + 1u; } else { hi = mid; }
    }
    return lo;
}

// One step of a merge sort over rows of p.Lin pairs: runs of p.w (a multiple of TILE) merge
// pairwise. Workgroup c writes outputs [c * TILE, (c + 1) * TILE) of its row (never straddling two
// merged blocks of 2 p.w): it splits the two runs along the merge path at both ends, loads the
// parts into workgroup memory (coalesced), and places each pair at its rank in its part plus its
// rank in the other part (a binary search in workgroup memory; exact, the order being total).
@compute @workgroup_size(WG)
fn merge_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let c = flat_id(wid, nwg);
    let chunks = (p.Lin + TILE - 1u) / TILE;
    if (c >= p.rows * chunks) { return; } // uniform: the same for the whole workgroup
    let r = c / chunks;
    let pos = (c % chunks) * TILE;
    let base = (pos / (2u * p.w)) * 2u * p.w;
    let na = min(p.w, p.Lin - base);
    let nb = select(0u, min(p.w, p.Lin - base - na), p.Lin > base + na);
    let a0 = r * p.Lin + base;
    let b0 = a0 + na;
    let d0 = pos - base;
    let d1 = min(d0 + TILE, na + nb);
    if (lid == 0u) { si[0] = split(a0, na, b0, nb, d0); } // the two cuts pass through si
    if (lid == 1u) { si[1] = split(a0, na, b0, nb, d1); }
    workgroupBarrier();
    let sa = si[0];
    let ea = si[1];
    workgroupBarrier();
    let sb = d0 - sa;
    let eb = d1 - ea;
    let ma = ea - sa; // A's part: slots [0, ma); B's: [ma, ma + mb)
    let mb = eb - sb;
    for (var q = lid; q < ma + mb; q += WG) {
        let g = select(b0 + sb + q - ma, a0 + sa + q, q < ma);
        sk[q] = kload(g);
        si[q] = ia[g];
    }
    workgroupBarrier();
    for (var q = lid; q < ma + mb; q += WG) {
        let k = sk[q];
        let i = si[q];
        var lo = select(0u, ma, q < ma); // search the other part
        var hi = select(ma, ma + mb, q < ma);
        let start = lo;
        while (lo < hi) {
            let mid = (lo + hi) >> 1u;
            if (less(sk[mid], si[mid], k, i)) { lo = mid + 1u; } else { hi = mid; }
        }
        let own = select(q - ma, q, q < ma);
        let o = a0 + d0 + own + (lo - start);
        kstore(o, k);
        ib[o] = i;
    }
}

// ---- unpack_main ----

// Pair index (in the pair buffers) of output element e, and the x element it names.
fn src_of(e: u32) -> vec2<u32> {
    let q = (e / p.inner) % p.n_out;
    let r = (e / (p.inner * p.n_out)) * p.inner + e % p.inner;
    var s = q;
    if (p.pick != 0u) {
        s = p.pos;
        if (p.pick == 2u && keq(kload(r * p.Ls), KT(p.nan_key))) { s = 0u; } // a NaN row: its first NaN
    }
    let j = ia[r * p.Ls + s];
    return vec2<u32>(row_base(r) + j * p.stride, j);
}

@compute @workgroup_size(WG1)
fn unpack_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let w = flat_id(wid, nwg) * WG1 + lid;
    let total = p.rows * p.n_out; // output elements (rows count the inner positions too)
    if ((p.outs & 1u) != 0u && w * PACK < total) {
        var v: array<CT, 4>;
        for (var c = 0u; c < PACK; c++) {
            let e = w * PACK + c;
            if (e < total) { v[c] = ldx(src_of(e).x); }
        }
        stv(w, v);
    }
    if ((p.outs & 2u) != 0u && w < total) {
        var v: array<i32, 4>;
        v[0] = i32(src_of(w).y);
        sti(w, v);
    }
}

// ---- unique over one sorted row of p.n pairs ----

// 1 where a group starts: the first pair, a new key, or a NaN (NaNs never equal anything).
@compute @workgroup_size(WG1)
fn uflag_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let e = flat_id(wid, nwg) * WG1 + lid;
    if (e >= p.n) { return; }
    let k = kload(e);
    let start = e == 0u || !keq(k, kload(e - 1u)) || (p.is_float != 0u && keq(k, KT(p.nan_key)));
    kb[e] = select(0u, 1u, start);
}

// ka: the inclusive scan of the flags (group number + 1); ia: positions. Writes each group's start
// pair into kb and the group of each element (inverse) through sti.
@compute @workgroup_size(WG1)
fn ustart_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) lid: u32) {
    let e = flat_id(wid, nwg) * WG1 + lid;
    if (e >= p.n) { return; }
    let g = ka[e] - 1u;
    if (e == 0u || ka[e - 1u] != ka[e]) { kb[g] = e; }
    if ((p.outs & 2u) != 0u) {
        var v: array<i32, 4>;
        v[0] = i32(g);
        sti(ia[e], v);
    }
}

// ka: group starts, ia: positions. Values (stv, x flattened through p.kept), counts (sti) and the
// first occurrence (ib) per group.
@compute @workgroup_size(WG1)
fn ugather_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                @builtin(local_invocation_index) lid: u32) {
    let w = flat_id(wid, nwg) * WG1 + lid;
    if ((p.outs & 1u) != 0u && w * PACK < p.n_out) {
        var v: array<CT, 4>;
        for (var c = 0u; c < PACK; c++) {
            let g = w * PACK + c;
            if (g < p.n_out) { v[c] = ldx(layout_index(p.kept, ia[ka[g]]) + p.off); }
        }
        stv(w, v);
    }
    if (w < p.n_out) {
        let s = ka[w];
        let end = select(p.n, ka[w + 1u], w + 1u < p.n_out);
        if ((p.outs & 2u) != 0u) {
            var v: array<i32, 4>;
            v[0] = i32(end - s);
            sti(w, v);
        }
        if ((p.outs & 4u) != 0u) { ib[w] = ia[s]; }
    }
}
