// Quantized linear layers on the tensor cores (src/ops/matmul_tcq.c): out[m, n] = sum_k x[m, k] W[n, k]
// (+ bias[n]) for prefill, with W in its GGUF blocks (Q8_0, Q4_0: 32 values and an f16 scale a
// block) and x f32 rows. matmul_tcd.wgsl's staged tiles: every k slab of BK = 32 is one block of
// each of the tile's BN weight rows, dequantised (q * d, rounded to f16) while it goes from
// registers into workgroup memory, and the tile's BM rows of x, rounded to f16 the same way; the
// fragments sum in f32. Slabs are double-buffered: the next slab's raw words are loaded into
// registers while the current one's fragments multiply (one barrier a slab).
// Bindings: a = x as vec4s (row m at p.off_a + m * p.sam, in vec4s), b = the weight's bytes as u32
// words (row n at byte p.off_b + n * p.sbn), c = the bias (f32, element p.off_c + n) when p.has_c,
// out f32 (element (zrow + m) * p.ldo + p.n0 + n). The bias is the accumulators' start value.
// A split along k (p.tpr != 0, matmul.c's mm_split_k): workgroup z sums k in [z * p.tpr, ..) into
// rows z * M .. of out, without the bias (the combine adds it).
// The prelude holds the enables, SGS, SGR, SGC, FM, FN, SM, SN, SK, FMT (wgt_ftype: 8 Q8_0, 2 Q4_0),
// lib_matmul's "params", lib_matmul_tcd's fragment sections and lib_matmul_tcq's acc_load.

const NSG: u32 = SGR * SGC;
const NT: u32 = NSG * SGS;
const WM: u32 = FM * SM;
const WN: u32 = FN * SN;
const BM: u32 = SGR * WM;
const BN: u32 = SGC * WN;
const CE: u32 = SM * SN / SGS; // elements of a fragment per invocation
const BK: u32 = 32u;           // one block of every weight row a slab
const LDS: u32 = BK + 8u;      // a staged row, padded: consecutive rows on other banks
const NWA: u32 = BM * BK / 4u / NT; // vec4s of x an invocation stages a slab
const NWB: u32 = BN * 2u / NT;      // half blocks of W an invocation stages a slab
const Q8_0: u32 = 8u;
const BB: u32 = select(18u, 34u, FMT == Q8_0); // bytes of a block

@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read> c: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> Cs: array<f32, max(NSG * SM * SN, SM * BN)>; // partial tiles' stores; the bias rows at the start
var<workgroup> As: array<f16, 2u * BM * LDS>;
var<workgroup> Bs: array<f16, 2u * BN * LDS>;
var<private> ra: array<vec4<f32>, NWA>;
var<private> rq: array<vec4<u32>, NWB>; // a half block's bytes (Q8_0: 16 values; Q4_0: 8 bytes in .xy)
var<private> rd: array<f32, NWB>;       // its block's scale

// Word w of b shifted right by sh bits, the next word's low bits on top (bytes at an even address).
fn joined(lo: u32, hi: u32, sh: u32) -> u32 { return select((lo >> sh) | (hi << (32u - sh)), lo, sh == 0u); }

// Slab k0 of the tile's x rows (from row0) and weight rows (from col0) into registers; zeros past
// M and N.
fn fetch(row0: u32, col0: u32, k0: u32, t: u32) {
    for (var q = 0u; q < NWA; q++) {
        let w = t + q * NT;
        let m = row0 + w / (BK / 4u);
        var v = vec4<f32>(0.0);
        if (m < p.M) { v = a[p.off_a + m * p.sam + k0 / 4u + w % (BK / 4u)]; }
        ra[q] = v;
    }
    for (var q = 0u; q < NWB; q++) {
        let w = t + q * NT;
        let n = col0 + w / 2u;
        let h = w % 2u;
        var v = vec4<u32>(0u);
        var d = 0.0;
        if (n < p.N) {
            let blk = p.off_b + n * p.sbn + (k0 / BK) * BB;
            d = unpack2x16float(b[blk >> 2u] >> ((blk & 2u) * 8u)).x;
            // Q8_0: 16 signed bytes from 2 + 16 h; Q4_0: 8 bytes of nibbles from 2 + 8 h
            let s = blk + 2u + select(8u, 16u, FMT == Q8_0) * h;
            let i = s >> 2u;
            let sh = (s & 3u) * 8u;
            let w0 = b[i];
            let w1 = b[i + 1u];
            if (FMT == Q8_0) {
                let w2 = b[i + 2u];
                let w3 = b[i + 3u];
                var w4 = 0u;
                if (sh != 0u) { w4 = b[i + 4u]; }
                v = vec4<u32>(joined(w0, w1, sh), joined(w1, w2, sh), joined(w2, w3, sh), joined(w3, w4, sh));
            } else {
                var w2 = 0u;
                if (sh != 0u) { w2 = b[i + 2u]; }
                v = vec4<u32>(joined(w0, w1, sh), joined(w1, w2, sh), 0u, 0u);
            }
        }
        rq[q] = v;
        rd[q] = d;
    }
}

// Four signed bytes of a word as f32.
fn i8x4(v: u32) -> vec4<f32> {
    return vec4<f32>((vec4<i32>(bitcast<i32>(v)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

// The nibbles at bit s of each byte of a word minus 8, as f32.
fn nib4(v: u32, s: u32) -> vec4<f32> {
    return vec4<f32>((vec4<u32>(v) >> vec4<u32>(s, s + 8u, s + 16u, s + 24u)) & vec4<u32>(0xfu)) - 8.0;
}

// Four dequantised values into Bs from element i.
fn put4(i: u32, v: vec4<f32>) {
    Bs[i] = f16(v.x);
    Bs[i + 1u] = f16(v.y);
    Bs[i + 2u] = f16(v.z);
    Bs[i + 3u] = f16(v.w);
}

// The registers into buffer buf of As / Bs (rows of LDS), the blocks dequantised as
// src/quant/quant.c does (q * d in f32), then rounded to f16.
fn stash(buf: u32, t: u32) {
    for (var q = 0u; q < NWA; q++) {
        let w = t + q * NT;
        let i = (buf * BM + w / (BK / 4u)) * LDS + (w % (BK / 4u)) * 4u;
        As[i] = f16(ra[q].x);
        As[i + 1u] = f16(ra[q].y);
        As[i + 2u] = f16(ra[q].z);
        As[i + 3u] = f16(ra[q].w);
    }
    for (var q = 0u; q < NWB; q++) {
        let w = t + q * NT;
        let h = w % 2u;
        let i = (buf * BN + w / 2u) * LDS;
        let v = rq[q];
        let d = rd[q];
        if (FMT == Q8_0) { // values 16 h .. 16 h + 15
            put4(i + 16u * h, i8x4(v.x) * d);
            put4(i + 16u * h + 4u, i8x4(v.y) * d);
            put4(i + 16u * h + 8u, i8x4(v.z) * d);
            put4(i + 16u * h + 12u, i8x4(v.w) * d);
        } else { // bytes 8 h .. 8 h + 7: low nibbles are values 8 h + j, high ones 16 + 8 h + j
            put4(i + 8u * h, nib4(v.x, 0u) * d);
            put4(i + 8u * h + 4u, nib4(v.y, 0u) * d);
            put4(i + 16u + 8u * h, nib4(v.x, 4u) * d);
            put4(i + 20u + 8u * h, nib4(v.y, 4u) * d);
        }
    }
}

fn load_a(i: u32, sm0: u32, kk: u32, buf: u32) -> LEFT { return frag_as((buf * BM + sm0 + i * SM) * LDS + kk, LDS); }
fn load_b(j: u32, sn0: u32, kk: u32, buf: u32) -> RIGHT { return frag_bs((buf * BN + sn0 + j * SN) * LDS + kk, LDS); }

// Accumulator (i, j) into out: straight from the fragment for whole tiles, else through the
// subgroup's part of Cs (whole is uniform in the workgroup).
fn emit(c: ACC, i: u32, j: u32, m0: u32, n0: u32, sg: u32, lane: u32, zrow: u32, whole: bool) {
    if (whole) {
        frag_store_out(c, (zrow + m0 + i * SM) * p.ldo + p.n0 + n0 + j * SN, p.ldo);
        return;
    }
    frag_store_cs(c, sg * SM * SN);
    workgroupBarrier();
    for (var q = 0u; q < CE; q++) {
        let e = lane + q * SGS;
        let m = m0 + i * SM + e / SN;
        let n = n0 + j * SN + e % SN;
        if (m < p.M && n < p.N) { out[(zrow + m) * p.ldo + p.n0 + n] = Cs[sg * SM * SN + e]; }
    }
    workgroupBarrier();
}

// Named accumulators and fragments (matmul_tcd.wgsl says why); FM and FN are at most 4.
@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let sg = lid / SGS;
    let lane = lid % SGS;
    frag_init(lane);
    let sm0 = (sg / SGC) * WM; // the subgroup's rows and columns within the workgroup's tile
    let sn0 = (sg % SGC) * WN;
    let m0 = wid.y * BM + sm0;
    let n0 = wid.x * BN + sn0;
    var k_lo = 0u;
    var k_hi = p.K;
    if (p.tpr != 0u) { k_lo = wid.z * p.tpr; k_hi = min(p.K, k_lo + p.tpr); }
    var c00 = frag_zero();
    var c01 = frag_zero();
    var c02 = frag_zero();
    var c03 = frag_zero();
    if (p.has_c != 0u) { // the bias, as SM equal rows of the tile's columns in Cs
        for (var e = lid; e < SM * BN; e += NT) {
            let n = wid.x * BN + e % BN;
            var v = 0.0;
            if (n < p.N) { v = c[p.off_c + n]; }
            Cs[e] = v;
        }
        workgroupBarrier();
        if (FN > 0u) { c00 = acc_load(sn0, BN); }
        if (FN > 1u) { c01 = acc_load(sn0 + SN, BN); }
        if (FN > 2u) { c02 = acc_load(sn0 + 2u * SN, BN); }
        if (FN > 3u) { c03 = acc_load(sn0 + 3u * SN, BN); }
        workgroupBarrier();
    }
    var c10 = c00;
    var c11 = c01;
    var c12 = c02;
    var c13 = c03;
    var c20 = c00;
    var c21 = c01;
    var c22 = c02;
    var c23 = c03;
    var c30 = c00;
    var c31 = c01;
    var c32 = c02;
    var c33 = c03;
    var b0 = RIGHT();
    var b1 = RIGHT();
    var b2 = RIGHT();
    var b3 = RIGHT();
    var buf = 0u;
    if (k_lo < k_hi) {
        fetch(wid.y * BM, wid.x * BN, k_lo, lid);
        stash(0u, lid);
    }
    workgroupBarrier();
    for (var k = k_lo; k < k_hi; k += BK) {
        let more = k + BK < k_hi;
        if (more) { fetch(wid.y * BM, wid.x * BN, k + BK, lid); }
        for (var kk = 0u; kk < BK; kk += SK) {
            if (FN > 0u) { b0 = load_b(0u, sn0, kk, buf); }
            if (FN > 1u) { b1 = load_b(1u, sn0, kk, buf); }
            if (FN > 2u) { b2 = load_b(2u, sn0, kk, buf); }
            if (FN > 3u) { b3 = load_b(3u, sn0, kk, buf); }
            if (FM > 0u) {
                let a0 = load_a(0u, sm0, kk, buf);
                if (FN > 0u) { c00 = frag_mma(a0, b0, c00); }
                if (FN > 1u) { c01 = frag_mma(a0, b1, c01); }
                if (FN > 2u) { c02 = frag_mma(a0, b2, c02); }
                if (FN > 3u) { c03 = frag_mma(a0, b3, c03); }
            }
            if (FM > 1u) {
                let a1 = load_a(1u, sm0, kk, buf);
                if (FN > 0u) { c10 = frag_mma(a1, b0, c10); }
                if (FN > 1u) { c11 = frag_mma(a1, b1, c11); }
                if (FN > 2u) { c12 = frag_mma(a1, b2, c12); }
                if (FN > 3u) { c13 = frag_mma(a1, b3, c13); }
            }
            if (FM > 2u) {
                let a2 = load_a(2u, sm0, kk, buf);
                if (FN > 0u) { c20 = frag_mma(a2, b0, c20); }
                if (FN > 1u) { c21 = frag_mma(a2, b1, c21); }
                if (FN > 2u) { c22 = frag_mma(a2, b2, c22); }
                if (FN > 3u) { c23 = frag_mma(a2, b3, c23); }
            }
            if (FM > 3u) {
                let a3 = load_a(3u, sm0, kk, buf);
                if (FN > 0u) { c30 = frag_mma(a3, b0, c30); }
                if (FN > 1u) { c31 = frag_mma(a3, b1, c31); }
                if (FN > 2u) { c32 = frag_mma(a3, b2, c32); }
                if (FN > 3u) { c33 = frag_mma(a3, b3, c33); }
            }
        }
        if (more) { stash(1u - buf, lid); }
        workgroupBarrier();
        buf = 1u - buf;
    }
    let zrow = wid.z * p.M; // a slice of a split k: its own rows of out
    let whole = (wid.y + 1u) * BM <= p.M && (wid.x + 1u) * BN <= p.N;
    if (FM > 0u && FN > 0u) { emit(c00, 0u, 0u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 0u && FN > 1u) { emit(c01, 0u, 1u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 0u && FN > 2u) { emit(c02, 0u, 2u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 0u && FN > 3u) { emit(c03, 0u, 3u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 1u && FN > 0u) { emit(c10, 1u, 0u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 1u && FN > 1u) { emit(c11, 1u, 1u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 1u && FN > 2u) { emit(c12, 1u, 2u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 1u && FN > 3u) { emit(c13, 1u, 3u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 2u && FN > 0u) { emit(c20, 2u, 0u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 2u && FN > 1u) { emit(c21, 2u, 1u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 2u && FN > 2u) { emit(c22, 2u, 2u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 2u && FN > 3u) { emit(c23, 2u, 3u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 3u && FN > 0u) { emit(c30, 3u, 0u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 3u && FN > 1u) { emit(c31, 3u, 1u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 3u && FN > 2u) { emit(c32, 3u, 2u, m0, n0, sg, lane, zrow, whole); }
    if (FM > 3u && FN > 3u) { emit(c33, 3u, 3u, m0, n0, sg, lane, zrow, whole); }
}
