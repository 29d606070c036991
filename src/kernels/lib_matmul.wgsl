// The matrix-product kernels' shared parts, one section each (src/ops/matmul.c pastes them into
// the preludes of matmul.wgsl, matmul_int.wgsl and matmul_tc.wgsl): the parameters (the host's
// mm_params, byte for byte) and the bindings, and matmul_tc's tile loaders (each loader section
// declares tile_load / tile_store, or A's and B's halves of them behind "tc load split").

// ---- params ----
struct Params {
    M: u32, N: u32, K: u32, batch: u32,
    off_a: u32, off_b: u32, off_c: u32, has_c: u32,
    sam: u32, sak: u32, sbk: u32, sbn: u32,
    scm: u32, scn: u32, alpha: f32, beta: f32,
    bshape: vec4<u32>, // batch dims (collapsed, right-aligned, unused leading ones 1)
    bsa: vec4<u32>,    // their strides in A, B, C
    bsb: vec4<u32>,
    bsc: vec4<u32>,
    ldo: u32, n0: u32, z0: u32, tpr: u32,
    zero: u32, zpad0: u32, zpad1: u32, zpad2: u32, // zero: 0 (a graph's fused epilogue reads it)
};

@group(0) @binding(0) var<uniform> p: Params;

// Element offsets of batch z in A, B and C.
fn batch_offsets(z: u32) -> vec3<u32> {
    var rem = z;
    var o = vec3<u32>(0u, 0u, 0u);
    for (var d = 3i; d >= 0; d = d - 1i) {
        let n = p.bshape[d];
        let i = rem % n;
        rem = rem / n;
        o = o + i * vec3<u32>(p.bsa[d], p.bsb[d], p.bsc[d]);
    }
    return o;
}

// ---- bindings float ----
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

// ---- bindings int ----
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

// ---- bindings vec ----
// A and B as 16-byte words: offsets, row strides and batch strides of A and B count those.
@group(0) @binding(1) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
fn word(op: u32, i: u32) -> vec4<u32> {
    if (op == 0u) { return a[i]; }
    return b[i];
}

// ---- words ----
// The 16-byte word q as elements (the first 4 for f32; dt 0 f32, 1 f16, 2 bf16).
fn words_to(q: vec4<u32>, dt: u32) -> array<TT, 8> {
    var r: array<TT, 8>;
    if (dt == 0u) {
        let f = bitcast<vec4<f32>>(q);
        r[0] = TT(f.x); r[1] = TT(f.y); r[2] = TT(f.z); r[3] = TT(f.w);
    } else if (dt == 1u) {
        for (var i = 0u; i < 4u; i++) {
            let h = unpack2x16float(q[i]);
            r[2u * i] = TT(h.x); r[2u * i + 1u] = TT(h.y);
        }
    } else {
        for (var i = 0u; i < 4u; i++) {
            r[2u * i] = TT(bitcast<f32>(q[i] << 16u)); r[2u * i + 1u] = TT(bitcast<f32>(q[i] & 0xffff0000u));
        }
    }
    return r;
}

// Word l of an operand's tile of 16-byte words along k (matmul_regs.wgsl's mode 1, matmul_tc's
// "tc load vec"): wr words (e elements each) a tile row; row r0 + l / wr of rows at stride (in
// words' elements from base), k from k0; zero past the rows or ts.kend. word(op, i) and ts come
// from the kernel.
fn tile_word(op: u32, l: u32, wr: u32, e: u32, r0: u32, rows: u32, base: u32, stride: u32, k0: u32) -> vec4<u32> {
    let gr = r0 + l / wr;
    let gk = k0 + (l % wr) * e;
    if (gr < rows && gk < ts.kend) { return word(op, base + gr * stride + gk / e); }
    return vec4<u32>(0u);
}

// ---- operand a scalar ----
// matmul.wgsl's A read one element at a time (ldA, from the prelude); wordA unused.
@group(0) @binding(1) var<storage, read> a: array<u32>;
fn wordA(i: u32) -> vec4<u32> { return vec4<u32>(0u); }

// ---- operand a vec ----
// matmul.wgsl's A read as 16-byte words; ldA unused.
@group(0) @binding(1) var<storage, read> a: array<vec4<u32>>;
fn wordA(i: u32) -> vec4<u32> { return a[i]; }
fn ldA(i: u32) -> f32 { return 0.0; }

// ---- operand b scalar ----
@group(0) @binding(2) var<storage, read> b: array<u32>;
fn wordB(i: u32) -> vec4<u32> { return vec4<u32>(0u); }

// ---- operand b vec ----
@group(0) @binding(2) var<storage, read> b: array<vec4<u32>>;
fn wordB(i: u32) -> vec4<u32> { return b[i]; }
fn ldB(i: u32) -> f32 { return 0.0; }

// ---- operand b vec binding ----
// B's words without wordB: a captured graph's merged product defines it (src/ops/matmul_fuse.c).
@group(0) @binding(2) var<storage, read> b: array<vec4<u32>>;
fn ldB(i: u32) -> f32 { return 0.0; }

// ---- bindings c out ----
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

// ---- tc load scalar ----
// matmul_tc's tiles from strided operands, one element per load (ldA, ldB): each invocation loads
// A_PER elements of A's tile and B_PER of B's into registers (tile_load), converted into stage s
// of As / Bs after the fragment products of the current stage (tile_store). Load order: along k
// where the operand is contiguous in k, else along m (n): coalesced reads.
const A_PER: u32 = BM * BK / WG;
const B_PER: u32 = BN * BK / WG;
var<private> ra: array<f32, A_PER>;
var<private> rb: array<f32, B_PER>;

fn a_at(e: u32) -> vec2<u32> { // (m, k) in the tile of load e
    if (ts.a_kfast) { return vec2<u32>(e / BK, e % BK); }
    return vec2<u32>(e % BM, e / BM);
}

fn b_at(e: u32) -> vec2<u32> { // (n, k)
    if (ts.b_kfast) { return vec2<u32>(e / BK, e % BK); }
    return vec2<u32>(e % BN, e / BN);
}

fn tile_load(k0: u32) {
    for (var r = 0u; r < A_PER; r++) {
        let mk = a_at(ts.lid + r * WG);
        let gm = ts.m0 + mk.x;
        let gk = k0 + mk.y;
        var v = 0.0;
        if (gm < p.M && gk < ts.kend) { v = ldA(ts.abase + gm * p.sam + gk * p.sak); }
        ra[r] = v;
    }
    for (var r = 0u; r < B_PER; r++) {
        let nk = b_at(ts.lid + r * WG);
        let gn = ts.n0 + nk.x;
        let gk = k0 + nk.y;
        var w = 0.0;
        if (gn < p.N && gk < ts.kend) { w = ldB(ts.bbase + gk * p.sbk + gn * p.sbn); }
        rb[r] = w;
    }
}

fn tile_store(s: u32) {
    for (var r = 0u; r < A_PER; r++) {
        let mk = a_at(ts.lid + r * WG);
        As[s * TA + mk.x * LDA + mk.y] = TT(ra[r]);
    }
    for (var r = 0u; r < B_PER; r++) {
        let nk = b_at(ts.lid + r * WG);
        Bs[s * TB + nk.x * LDB + nk.y] = TT(rb[r]);
    }
}

// ---- bindings q ----
// A as 16-byte words; B as GGUF blocks in 32-bit words, named `w` as qlinear.wgsl's decoders
// (rd32, piece) read it.
@group(0) @binding(1) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
fn word(op: u32, i: u32) -> vec4<u32> { return a[i]; } // A's words ("tc load vec")

// ---- tc load split ----
// matmul_tc's tiles from the operand loaders below (A's then B's): registers first (tile_load),
// then converted into stage s of As / Bs after the fragment products of the current stage.
fn tile_load(k0: u32) {
    a_load(k0);
    b_load(k0);
}

fn tile_store(s: u32) {
    a_store(s);
    b_store(s);
}

// ---- tc load vec ----
// A (op 0) and, with "tc load b vec", B (op 1: stored [n][k], a weight [N, K]) contiguous in k with
// rows of whole 16-byte words (the binding's vec4<u32>, read through word()): EA / EB elements a
// word (4 f32, 8 f16 / bf16, dtype DA / DB as words_to's); the k range is a multiple of them, so a
// word is in range or out whole. One loader for both operands: op picks the constants, which fold
// where it is inlined. VB (from "tc load b vec" or "tc load b q"): 1 when B loads here.
const AV: u32 = BK / EA; // words of a tile row
const BV: u32 = BK / EB;
const A_PER: u32 = BM * AV / WG;
const VB_PER: u32 = VB * BN * BV / WG;
var<private> rv: array<vec4<u32>, A_PER + VB_PER>; // A's words, then B's

fn vec_load(op: u32, k0: u32) {
    let wr = select(BV, AV, op == 0u);
    let e = select(EB, EA, op == 0u);
    let r0 = select(ts.n0, ts.m0, op == 0u);
    let rows = select(p.N, p.M, op == 0u);
    let base = select(ts.bbase, ts.abase, op == 0u);
    let stride = select(p.sbn, p.sam, op == 0u);
    let g0 = select(A_PER, 0u, op == 0u);
    for (var r = 0u; r < select(VB_PER, A_PER, op == 0u); r++) {
        rv[g0 + r] = tile_word(op, ts.lid + r * WG, wr, e, r0, rows, base, stride, k0);
    }
}

fn vec_store(op: u32, s: u32) {
    let wr = select(BV, AV, op == 0u);
    let e = select(EB, EA, op == 0u);
    let d = select(DB, DA, op == 0u);
    let ld = select(LDB, LDA, op == 0u);
    let t0 = s * select(TB, TA, op == 0u);
    let g0 = select(A_PER, 0u, op == 0u);
    for (var r = 0u; r < select(VB_PER, A_PER, op == 0u); r++) {
        let l = ts.lid + r * WG;
        let v = words_to(rv[g0 + r], d);
        let o = t0 + (l / wr) * ld + (l % wr) * e;
        for (var i = 0u; i < e; i++) {
            if (op == 0u) { As[o + i] = v[i]; } else { Bs[o + i] = v[i]; }
        }
    }
}

fn a_load(k0: u32) { vec_load(0u, k0); }
fn a_store(s: u32) { vec_store(0u, s); }

// ---- tc load b vec ----
const VB: u32 = 1u;
fn b_load(k0: u32) { vec_load(1u, k0); }
fn b_store(s: u32) { vec_store(1u, s); }

// ---- tc load b q ----
// B from GGUF blocks, dequantised by qlinear.wgsl's piece() (in the prelude, with FMT): row n's
// bytes start at byte ts.bbase + n * p.sbn; a k step is one 32-element unit (BK = 32), 4 pieces
// of 8 elements a row.
const VB: u32 = 0u; // "tc load vec" loads A alone
const B_PER: u32 = BN * 4u / WG;
var<private> rb: array<Piece, B_PER>;

fn b_load(k0: u32) {
    for (var r = 0u; r < B_PER; r++) {
        let e = ts.lid + r * WG;
        let gn = ts.n0 + e / 4u;
        var pc = Piece(vec4<f32>(0.0), vec4<f32>(0.0));
        if (gn < p.N && k0 < ts.kend) { pc = piece(ts.bbase + gn * p.sbn, k0 / 32u, e % 4u); }
        rb[r] = pc;
    }
}

fn b_store(s: u32) {
    for (var r = 0u; r < B_PER; r++) {
        let e = ts.lid + r * WG;
        let o = s * TB + (e / 4u) * LDB + (e % 4u) * 8u;
        let pc = rb[r];
        for (var i = 0u; i < 4u; i++) {
            Bs[o + i] = TT(pc.a[i]);
            Bs[o + 4u + i] = TT(pc.b[i]);
        }
    }
}

// ---- gemv a ----
// matmul_gemv.wgsl's A, read in 16-byte words by ldA8.
@group(0) @binding(1) var<storage, read> a: array<vec4<u32>>;

// ---- gemv a prologue ----
// matmul_gemv.wgsl's f32 A when a captured graph computes its elements (a fused prologue: the
// elementwise chain that made A, src/ops/elementwise_fuse.c, defines ldA1(i), element i of the
// binding); ldA8(v) gives elements 4 v .. 4 v + 7 as ldA8 of f32 words would.
@group(0) @binding(1) var<storage, read> a: array<u32>;
fn ldA8(v: u32) -> array<vec4<f32>, 2> {
    let e = v * 4u;
    return array<vec4<f32>, 2>(vec4<f32>(ldA1(e), ldA1(e + 1u), ldA1(e + 2u), ldA1(e + 3u)),
                               vec4<f32>(ldA1(e + 4u), ldA1(e + 5u), ldA1(e + 6u), ldA1(e + 7u)));
}

// ---- gemv pro none ----
fn mm_pro_begin(lid: u32) {}

// ---- gemv norm prologue ----
// A captured rms_norm fused into the one-row gemv product reading its output (elementwise_fuse.c,
// WGT_GRAPH_FUSE_NORM_MATMUL=1): `a` is bound to the norm's input; the prelude's constants say
// where: NPRO_XOFF, the row's first element there; NPRO_AOFF, A's first element in the product's
// own binding of it (ldA8's index space); NPRO_K, the row's length (= K); NPRO_EPS; ldnw(i), the
// norm weight's element i. Each workgroup sums the row's squares itself (a tree over WG lanes:
// not the norm kernel's order, so the product differs from the unfused one by rounding).
var<workgroup> npro_s: array<f32, WG>;
var<private> npro_r: f32;
fn mm_pro_begin(lid: u32) {
    var s = 0.0;
    for (var k = lid; k < NPRO_K; k = k + WG) { let v = bitcast<f32>(a[NPRO_XOFF + k]); s = s + v * v; }
    npro_s[lid] = s;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h = h >> 1u) {
        if (lid < h) { npro_s[lid] = npro_s[lid] + npro_s[lid + h]; }
        workgroupBarrier();
    }
    npro_r = inverseSqrt(npro_s[0] / f32(NPRO_K) + NPRO_EPS);
}
fn ldA1(i: u32) -> f32 {
    let k = i - NPRO_AOFF;
    return bitcast<f32>(a[NPRO_XOFF + k]) * npro_r * ldnw(k);
}

// ---- store ----
// Where every float kernel's results go (element i of out, row stride ldo); a captured graph's
// fused epilogue or merged product defines its own mm_st instead (src/ops/matmul_fuse.c,
// elementwise_fuse.c).
fn mm_st(i: u32, v: f32) { out[i] = v; }

// ---- epilogue helpers ----
// What the elementwise op functions of a fused epilogue call (as elementwise_ops.wgsl defines them).
fn nan_f() -> f32 { return bitcast<f32>(p.zero | 0x7fc00000u); }
fn inf_f() -> f32 { return bitcast<f32>(p.zero | 0x7f800000u); }
