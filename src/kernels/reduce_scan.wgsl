// Inclusive scans (cumsum, cumprod, cummax, cummin) along one dim of a strided input into a
// contiguous output of 4-byte elements, or 8-byte i64 (the op converts 16- and 8-bit results
// afterwards).
// Row o (a position over the other dims, p.kept) has L elements at stride p.stride; output element
// (o, r) lives at (o / inner) * L * inner + o % inner + r * inner.
//
// rows:    a workgroup per row, blocks of 4 * WG elements (4 per invocation: a serial scan, then a
//           scan of the WG invocation totals in workgroup memory, then the carry of earlier blocks).
// columns: an invocation per row, serially: for short rows (p.col; one pipeline for both).
//
// The prelude (src/ops/reduce.c) supplies lib_index.wgsl, `const WG: u32` (the workgroup size, a
// power of two the device allows), `alias CT` (f32, i32, u32, or vec2<u32>: i64 words through
// lib_i64.wgsl), `fn ld(i: u32) -> CT`, `fn sto(i: u32, v: CT)` (stores output element i),
// lib_index_out.wgsl's `fn st_idx(i: u32, v: u32)` (stores an index, declaring binding 3, or
// nothing) and what differs between scalar and word-pair CT: ct_add, ct_mul, ct_ge (a >= b),
// ct_le, ct_nan.

struct Params {
    n_rows: u32,
    L: u32,
    op: u32,      // wgt_scan_op
    off: u32,     // element offset of the input within its binding
    stride: u32,
    inner: u32,
    zero: u32,
    col: u32,
    kept: Layout,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

// v: the running value; i: position of the running extreme; c: 0 for the empty prefix.
struct S {
    v: CT,
    i: u32,
    c: u32,
};

fn is_nan_f(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }

// a then b (b is the later part of the row). Extremes: the later of equal values wins (PyTorch);
// a NaN wins and stays until the next NaN.
fn combine(a: S, b: S) -> S {
    if (a.c == 0u) { return b; }
    if (b.c == 0u) { return a; }
    var r = b;
    switch p.op {
        case 0u: { r.v = ct_add(a.v, b.v); }
        case 1u: { r.v = ct_mul(a.v, b.v); }
        case 2u: { if (!(ct_ge(b.v, a.v) || ct_nan(b.v))) { r = a; } }
        default: { if (!(ct_le(b.v, a.v) || ct_nan(b.v))) { r = a; } }
    }
    r.c = 1u;
    return r;
}

fn out_index(o: u32, r: u32) -> u32 { return (o / p.inner) * p.L * p.inner + o % p.inner + r * p.inner; }

var<workgroup> tot: array<S, WG>;

fn by_rows(o: u32, lid: u32) {
    if (o >= p.n_rows) { return; }
    let xb = layout_index(p.kept, o) + p.off;
    let ob = out_index(o, 0u);
    var carry = S(CT(0), 0u, 0u);
    for (var b0 = 0u; b0 < p.L; b0 = b0 + 4u * WG) {
        var part: array<S, 4>;
        var acc = S(CT(0), 0u, 0u);
        for (var k = 0u; k < 4u; k = k + 1u) {
            let r = b0 + lid * 4u + k;
            if (r < p.L) { acc = combine(acc, S(ld(xb + r * p.stride), r, 1u)); }
            part[k] = acc;
        }
        tot[lid] = acc;
        workgroupBarrier();
        for (var d = 1u; d < WG; d = d << 1u) {
            var t = tot[lid];
            if (lid >= d) { t = combine(tot[lid - d], t); }
            workgroupBarrier();
            tot[lid] = t;
            workgroupBarrier();
        }
        var before = carry;
        if (lid > 0u) { before = combine(carry, tot[lid - 1u]); }
        for (var k = 0u; k < 4u; k = k + 1u) {
            let r = b0 + lid * 4u + k;
            if (r < p.L) {
                let s = combine(before, part[k]);
                sto(ob + r * p.inner, s.v);
                st_idx(ob + r * p.inner, s.i);
            }
        }
        carry = combine(carry, tot[WG - 1u]);
        workgroupBarrier(); // tot is rewritten by the next block
    }
}

fn by_columns(o: u32) {
    if (o >= p.n_rows) { return; }
    let xb = layout_index(p.kept, o) + p.off;
    let ob = out_index(o, 0u);
    var acc = S(CT(0), 0u, 0u);
    for (var r = 0u; r < p.L; r = r + 1u) {
        acc = combine(acc, S(ld(xb + r * p.stride), r, 1u));
        sto(ob + r * p.inner, acc.v);
        st_idx(ob + r * p.inner, acc.i);
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * groups.x;
    if (p.col != 0u) { by_columns(g * WG + lid); } else { by_rows(g, lid); }
}
