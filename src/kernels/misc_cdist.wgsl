// cdist: out [B, P, R] = p-norm distances of the rows of x1 [B, P, M] and x2 [B, R, M], one output
// word (PACK elements) per invocation, batch dims broadcast through the layouts. Mode 5 is the
// epilogue of the matrix-product path for p = 2: sqrt(max(|a|^2 + |b|^2 - 2 g, 0)) with xa = |a|
// [B, P], xb = |b| [B, R] and g = a.b [B, P, R] (contiguous).
// The prelude (src/ops/misc.c) supplies lib_index.wgsl, `const PACK: u32`, `const WG: u32` (the
// workgroup size, a power of two from 32 to 256: op_workgroup_size), the loaders l1, l2, lg (-> f32)
// and the storer st.

struct Params {
    n: u32,          // output elements
    P: u32,
    R: u32,
    M: u32,
    mode: u32,       // 0: p = 0, 1: p = 1, 2: p = 2, 3: inf, 4: general p, 5: mm epilogue
    off1: u32,
    off2: u32,
    off_g: u32,
    s1p: u32,        // x1's strides along P and M, x2's along R and M
    s1m: u32,
    s2r: u32,
    s2m: u32,
    pw: f32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
    lb1: Layout,     // the batch dims (B...) with x1's strides
    lb2: Layout,     // with x2's
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xa: array<u32>;
@group(0) @binding(2) var<storage, read> xb: array<u32>;
@group(0) @binding(3) var<storage, read> gs: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

// NaN by its bits: compilers may fold d != d to false.
fn is_nan(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

// One feature's |difference| d into the running accumulator of the mode.
fn accumulate(acc: f32, d: f32) -> f32 {
    switch p.mode {
        case 0u: { return acc + select(0.0, 1.0, d != 0.0 || is_nan(d)); }
        case 1u: { return acc + d; }
        case 2u: { return acc + d * d; }
        case 3u: { return select(acc, d, !is_nan(acc) && (d > acc || is_nan(d))); }
        default: {
            if (d != 0.0 || is_nan(d)) { return acc + pow(d, p.pw); } // pow(0, y) is undefined in WGSL
            return acc;
        }
    }
}

fn finish(acc: f32) -> f32 {
    if (p.mode == 2u) { return sqrt(acc); }
    if (p.mode == 4u && acc != 0.0) { return pow(acc, 1.0 / p.pw); }
    return acc;
}

fn dist(e: u32) -> f32 {
    let j = e % p.R;
    let i = (e / p.R) % p.P;
    let b = e / (p.R * p.P);
    let a0 = layout_index(p.lb1, b) + p.off1 + i * p.s1p;
    let b0 = layout_index(p.lb2, b) + p.off2 + j * p.s2r;
    if (p.mode == 5u) {
        let na = l1(a0);
        let nb = l2(b0);
        return sqrt(max(na * na + nb * nb - 2.0 * lg(p.off_g + e), 0.0));
    }
    var acc = 0.0;
    for (var k = 0u; k < p.M; k = k + 1u) {
        acc = accumulate(acc, abs(l1(a0 + k * p.s1m) - l2(b0 + k * p.s2m)));
    }
    return finish(acc);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let w = gid.x + gid.y * groups.x * WG;
    if (w * PACK >= p.n) { return; }
    var v: array<f32, 4>;
    for (var k = 0u; k < PACK; k = k + 1u) {
        let e = w * PACK + k;
        if (e < p.n) { v[k] = dist(e); }
    }
    st(w, v);
}

// Modes 0-4 over tiles: a workgroup computes 16 x 16 distances (rows i of x1 against rows j of x2)
// with both sides' features staged through workgroup memory 16 at a time, so each feature is read
// from memory once per tile instead of once per distance. Writes f32 (out is f32 here: PACK 1).
// Invocation (ly, lx) owns the distances of column lx in rows ly, ly + WG / 16, ...: one at 256
// invocations, two at compatibility mode's 128.
const ROWS: u32 = 256u / WG;   // tile rows per invocation
const STRIDE: u32 = WG / 16u;  // between them
var<workgroup> ta: array<f32, 256>; // [16 rows of x1][16 features]
var<workgroup> tb: array<f32, 256>; // [16 rows of x2][16 features]

@compute @workgroup_size(WG)
fn tiled(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let tiles_i = (p.P + 15u) / 16u;
    let tiles_j = (p.R + 15u) / 16u;
    let g = wid.x + wid.y * groups.x;
    let b = g / (tiles_i * tiles_j);
    if (b * p.P * p.R >= p.n) { return; } // uniform per workgroup
    let t = g % (tiles_i * tiles_j);
    let i0 = (t / tiles_j) * 16u;
    let j0 = (t % tiles_j) * 16u;
    let lx = lid % 16u;
    let ly0 = lid / 16u;
    let a0 = layout_index(p.lb1, b) + p.off1;
    let b0 = layout_index(p.lb2, b) + p.off2;
    var acc: array<f32, ROWS>;
    for (var r = 0u; r < ROWS; r = r + 1u) { acc[r] = 0.0; }
    for (var k0 = 0u; k0 < p.M; k0 = k0 + 16u) {
        // invocation (ly, lx) stages feature k0 + lx of row i0 + ly of x1 and of row j0 + ly of x2
        let k = k0 + lx;
        for (var r = 0u; r < ROWS; r = r + 1u) {
            let ly = ly0 + r * STRIDE;
            var va = 0.0;
            var vb = 0.0;
            if (k < p.M && i0 + ly < p.P) { va = l1(a0 + (i0 + ly) * p.s1p + k * p.s1m); }
            if (k < p.M && j0 + ly < p.R) { vb = l2(b0 + (j0 + ly) * p.s2r + k * p.s2m); }
            ta[ly * 16u + lx] = va;
            tb[ly * 16u + lx] = vb;
        }
        workgroupBarrier();
        let kn = min(16u, p.M - k0);
        for (var kk = 0u; kk < kn; kk = kk + 1u) {
            let vb = tb[lx * 16u + kk];
            for (var r = 0u; r < ROWS; r = r + 1u) {
                acc[r] = accumulate(acc[r], abs(ta[(ly0 + r * STRIDE) * 16u + kk] - vb));
            }
        }
        workgroupBarrier();
    }
    let j = j0 + lx;
    for (var r = 0u; r < ROWS; r = r + 1u) {
        let i = i0 + ly0 + r * STRIDE;
        if (i < p.P && j < p.R) { out[(b * p.P + i) * p.R + j] = bitcast<u32>(finish(acc[r])); }
    }
}
