// Data movement: every output element is one element of x (or a fill value), found by mapping
// its coordinates. One kernel for index_select, gather, masked_fill, flip, roll, repeat, pad,
// tril/triu, cat/stack (one dispatch per input) and the take step of masked_select. Elements
// move as raw bits, so the kernel depends only on the element size.
// The prelude (src/ops/shape.c) supplies lib_index.wgsl, `const ESIZE: u32` (bytes per element:
// 1, 2, 4 or 8), and, for the index/mask binding `ib`: ld_idx(i) -> i32, idx_ok(i) -> bool
// (false when an i64 index does not fit 32 bits) and ld_mask(i) -> bool.
// Each invocation writes whole output words (4 / ESIZE elements, or the two words of one 8-byte
// element), so no two invocations share a word.

struct Params {
    n: u32,          // output elements (of this dispatch's range)
    op: u32,         // see OP_* below
    dim: u32,        // the op's dim, as one of the 8 right-aligned slots
    off_x: u32,      // element offsets within the bindings
    off_i: u32,
    fill: u32,       // fill bits (the element's own encoding)
    fill_hi: u32,    // high word of an 8-byte fill
    first: u32,      // first output element of this dispatch (cat: the word-aligned start)
    out_shape: array<vec4<u32>, 2>,
    lx: Layout,                     // x: its shape and strides, right-aligned to the output's ndim
    li: Layout,                     // ib's strides, indexed by output coordinates
    a: array<vec4<i32>, 2>,         // per-dim op parameters (pad before, roll shift, flip flag)
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<u32>;
@group(0) @binding(2) var<storage, read> ib: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<storage, read_write> err: array<atomic<u32>>;

const OP_COPY: u32 = 0u;        // cat/stack: out[c] = x[c - a0 along dim] for c in [a0, a1) along dim, else kept
const OP_GATHER: u32 = 1u;      // c[dim] = ib[li(c)] (index_select: li broadcasts the 1-D index)
const OP_MASKED_FILL: u32 = 2u; // fill where ib[li(c)] is set
const OP_FLIP: u32 = 3u;
const OP_ROLL: u32 = 4u;
const OP_REPEAT: u32 = 5u;
const OP_PAD_CONSTANT: u32 = 6u;
const OP_PAD_REFLECT: u32 = 7u;
const OP_PAD_REPLICATE: u32 = 8u;
const OP_PAD_CIRCULAR: u32 = 9u;
const OP_TRIL: u32 = 10u;       // a0 = k: keep col - row <= k
const OP_TRIU: u32 = 11u;       // keep col - row >= k
const OP_TAKE: u32 = 12u;       // out[j] = x at flat position ib[j] of lx's shape
const OP_SLAB: u32 = 13u;       // cat fast path: x's elements j (row-major) go to
                                // (j / a2) * a3 + a4 + j % a2 (slab, output row, slab start), all
                                // multiples of the elements per word, so words are never shared

fn sh(v: array<vec4<u32>, 2>, d: u32) -> u32 { return v[d >> 2u][d & 3u]; }
fn pa(d: u32) -> i32 { return p.a[d >> 2u][d & 3u]; }

// Raw bits of element i of x / of out: (low word, high word for 8-byte elements).
fn rd_x(i: u32) -> vec2<u32> {
    if (ESIZE == 8u) { return vec2<u32>(xs[2u * i], xs[2u * i + 1u]); }
    if (ESIZE == 4u) { return vec2<u32>(xs[i], 0u); }
    if (ESIZE == 2u) { return vec2<u32>((xs[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu, 0u); }
    return vec2<u32>((xs[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu, 0u);
}
fn rd_out(i: u32) -> vec2<u32> {
    if (ESIZE == 8u) { return vec2<u32>(out[2u * i], out[2u * i + 1u]); }
    if (ESIZE == 4u) { return vec2<u32>(out[i], 0u); }
    if (ESIZE == 2u) { return vec2<u32>((out[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu, 0u); }
    return vec2<u32>((out[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu, 0u);
}

fn flag(bit: u32) { atomicOr(&err[0], bit); }

// The bits of output element j.
fn element(j: u32) -> vec2<u32> {
    let fill = vec2<u32>(p.fill, p.fill_hi);
    if (p.op == OP_TAKE) {
        let at = ib[p.off_i + j];
        return rd_x(layout_index(p.lx, at) + p.off_x);
    }
    var c: array<u32, 8>;
    var rem = j;
    for (var d = 7u; d < 8u; d = d - 1u) {
        let n = sh(p.out_shape, d);
        c[d] = rem % n;
        rem = rem / n;
        if (rem == 0u) { break; } // the outer coordinates stay 0: low-rank shapes skip divisions
    }
    var iat = 0u;
    for (var d = 0u; d < 8u; d = d + 1u) { iat = iat + c[d] * sh(p.li.strides, d); }
    iat = iat + p.off_i;
    switch p.op {
        case 0u: { // OP_COPY
            let lo = u32(p.a[0].x);
            let hi = u32(p.a[0].y);
            if (c[p.dim] < lo || c[p.dim] >= hi) { return rd_out(j); }
            c[p.dim] = c[p.dim] - lo;
        }
        case 1u: { // OP_GATHER
            let n = i32(sh(p.lx.shape, p.dim));
            var v = ld_idx(iat);
            if (v < 0) { v = v + n; }
            if (!idx_ok(iat) || v < 0 || v >= n) { flag(1u); v = 0; }
            c[p.dim] = u32(v);
        }
        case 2u: { // OP_MASKED_FILL
            if (ld_mask(iat)) { return fill; }
        }
        case 3u, 4u, 5u: { // OP_FLIP, OP_ROLL, OP_REPEAT
            for (var d = 0u; d < 8u; d = d + 1u) {
                let n = sh(p.lx.shape, d);
                if (p.op == OP_FLIP && pa(d) != 0) { c[d] = n - 1u - c[d]; }
                if (p.op == OP_ROLL) { c[d] = (c[d] + n - u32(pa(d))) % n; }
                if (p.op == OP_REPEAT) { c[d] = c[d] % n; }
            }
        }
        case 6u, 7u, 8u, 9u: { // pads
            for (var d = 0u; d < 8u; d = d + 1u) {
                let n = i32(sh(p.lx.shape, d));
                var i = i32(c[d]) - pa(d);
                if (i < 0 || i >= n) {
                    if (p.op == OP_PAD_CONSTANT) { return fill; }
                    if (p.op == OP_PAD_REFLECT) {
                        if (i < 0) { i = -i; }
                        if (i >= n) { i = 2 * (n - 1) - i; }
                        i = clamp(i, 0, n - 1); // reflect pads are < n (checked on the host)
                    }
                    if (p.op == OP_PAD_REPLICATE) { i = clamp(i, 0, n - 1); }
                    if (p.op == OP_PAD_CIRCULAR) { i = ((i % n) + n) % n; }
                }
                c[d] = u32(i);
            }
        }
        case 10u, 11u: { // OP_TRIL, OP_TRIU
            let k = p.a[0].x;
            let diff = i32(c[7]) - i32(c[6]);
            if ((p.op == OP_TRIL && diff > k) || (p.op == OP_TRIU && diff < k)) { return fill; }
        }
        default: {}
    }
    var at = p.off_x;
    for (var d = 0u; d < 8u; d = d + 1u) { at = at + c[d] * sh(p.lx.strides, d); }
    return rd_x(at);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * groups.x) * WG + lid;
    if (ESIZE == 8u) {
        if (w >= p.n) { return; }
        var j = p.first + w;
        var e: vec2<u32>;
        if (p.op == OP_SLAB) {
            let slab = u32(p.a[0].z);
            e = rd_x(layout_index(p.lx, w) + p.off_x);
            j = (w / slab) * u32(p.a[0].w) + u32(p.a[1].x) + w % slab;
        } else {
            e = element(j);
        }
        out[2u * j] = e.x;
        out[2u * j + 1u] = e.y;
        return;
    }
    let pack = 4u / ESIZE;
    if (p.op == OP_SLAB) {
        let j = w * pack;
        if (j >= p.n) { return; }
        let slab = u32(p.a[0].z);
        let d = (j / slab) * u32(p.a[0].w) + u32(p.a[1].x) + j % slab;
        var word = 0u;
        for (var k = 0u; k < pack; k = k + 1u) {
            word = word | (rd_x(layout_index(p.lx, j + k) + p.off_x).x << (k * ESIZE * 8u));
        }
        out[d / pack] = word;
        return;
    }
    let j0 = p.first + w * pack;
    if (w * pack >= p.n) { return; }
    var word = 0u;
    for (var k = 0u; k < pack; k = k + 1u) {
        var bits = 0u;
        if (w * pack + k < p.n) { bits = element(j0 + k).x; } else { bits = rd_out(j0 + k).x; }
        word = word | (bits << (k * ESIZE * 8u));
    }
    out[j0 / pack] = word;
}
