// Where a subgroup-matrix product loses the fragments' rate (bench/tc_peak.c --gemm): out = A B^T,
// A [M][K] and B [N][K] f16 rows along k, out [M][N] f32, M, N, K multiples of the tiles. The same
// tiles as src/kernels/matmul_tcd.wgsl (NSG = SGR x SGC subgroups, each FM x FN fragments of 16 x 16,
// f32 sums), the fragments coming from (MODE):
//   0  storage, straight (matmul_tcd.wgsl as it is);
//   1  workgroup memory, k slabs of BK staged by 16-byte loads (8 f16 stores each), two barriers a slab;
//   2  the same staged by 4-byte loads (lane-contiguous, 2 f16 stores each);
//   3  as 2, double-buffered: the next slab's loads in registers during the products, one barrier;
//   4  as 1, double-buffered;
//   5  as 0 with K and the row stride compile-time constants (KS): offsets the compiler can prove
//      32-byte aligned.
// p.hot != 0 reads every tile from the first p.hot rows of A and B (cache-resident operands: what is
// left is the instruction cost of the loads). The prelude (tc_peak.c) sets SGS, SGR, SGC, FM, FN, BK,
// MODE, NBUF, KS, AW (a word of a and b: f16 for MODE 0, vec4<u32> or u32 when staged) and appends the
// fragment sections of this file after the separator lines (subgroup matrices or scalar code).

struct P { M: u32, N: u32, K: u32, hot: u32 };
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> a: array<AW>;
@group(0) @binding(2) var<storage, read> b: array<AW>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const NSG: u32 = SGR * SGC;
const NT: u32 = NSG * SGS;
const WM: u32 = FM * 16u;
const WN: u32 = FN * 16u;
const BM: u32 = SGR * WM;
const BN: u32 = SGC * WN;
const LDS: u32 = BK + 8u; // a staged row, padded: 16-byte aligned, rows on different banks
const EW: u32 = select(8u, 2u, MODE == 2u || MODE == 3u); // f16 elements a staged word
const NWA: u32 = BM * BK / EW / NT; // words of A a thread stages a slab
const NWB: u32 = BN * BK / EW / NT;
var<workgroup> As: array<f16, select(256u, NBUF * BM * LDS, MODE != 0u && MODE != 5u)>; // 256: a fragment (Dawn checks the size)
var<workgroup> Bs: array<f16, select(256u, NBUF * BN * LDS, MODE != 0u && MODE != 5u)>;
var<private> ra: array<AW, select(1u, NWA, MODE != 0u && MODE != 5u)>;
var<private> rb: array<AW, select(1u, NWB, MODE != 0u && MODE != 5u)>;

fn put(dst_a: bool, i: u32, w: AW) {
    // word w of f16 elements into As / Bs at element i
    for (var j = 0u; j < EW / 2u; j++) {
        let h = bitcast<vec2<f16>>(word(w, j));
        if (dst_a) { As[i + 2u * j] = h.x; As[i + 2u * j + 1u] = h.y; }
        else { Bs[i + 2u * j] = h.x; Bs[i + 2u * j + 1u] = h.y; }
    }
}

fn fetch(am0: u32, bn0: u32, k0: u32, t: u32) {
    for (var q = 0u; q < NWA; q++) {
        let w = t + q * NT;
        let r = w / (BK / EW);
        let c = (w % (BK / EW)) * EW;
        ra[q] = a[((am0 + r) * p.K + k0 + c) / EW];
    }
    for (var q = 0u; q < NWB; q++) {
        let w = t + q * NT;
        let r = w / (BK / EW);
        let c = (w % (BK / EW)) * EW;
        rb[q] = b[((bn0 + r) * p.K + k0 + c) / EW];
    }
}

fn stash(buf: u32, t: u32) {
    for (var q = 0u; q < NWA; q++) {
        let w = t + q * NT;
        put(true, (buf * BM + w / (BK / EW)) * LDS + (w % (BK / EW)) * EW, ra[q]);
    }
    for (var q = 0u; q < NWB; q++) {
        let w = t + q * NT;
        put(false, (buf * BN + w / (BK / EW)) * LDS + (w % (BK / EW)) * EW, rb[q]);
    }
}

@compute @workgroup_size(NT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let sg = lid / SGS;
    frag_init(lid % SGS);
    let om0 = wid.y * BM;
    let on0 = wid.x * BN;
    var am0 = om0;
    var bn0 = on0;
    if (p.hot != 0u) { am0 = om0 % p.hot; bn0 = on0 % p.hot; }
    let sm0 = (sg / SGC) * WM; // the subgroup's rows and columns within the tile
    let sn0 = (sg % SGC) * WN;
    var acc: array<ACC, FM * FN>;
    for (var f = 0u; f < FM * FN; f++) { acc[f] = frag_zero(); }
    if (MODE == 5u) {
        for (var k = 0u; k < KS; k += 16u) {
            var bf: array<RIGHT, FN>;
            for (var j = 0u; j < FN; j++) { bf[j] = fb_g((bn0 + sn0 + j * 16u) * KS + k, KS); }
            for (var i = 0u; i < FM; i++) {
                let af = fa_g((am0 + sm0 + i * 16u) * KS + k, KS);
                for (var j = 0u; j < FN; j++) { acc[i * FN + j] = frag_mma(af, bf[j], acc[i * FN + j]); }
            }
        }
    } else if (MODE == 0u) {
        for (var k = 0u; k < p.K; k += 16u) {
            var bf: array<RIGHT, FN>;
            for (var j = 0u; j < FN; j++) { bf[j] = fb_g((bn0 + sn0 + j * 16u) * p.K + k, p.K); }
            for (var i = 0u; i < FM; i++) {
                let af = fa_g((am0 + sm0 + i * 16u) * p.K + k, p.K);
                for (var j = 0u; j < FN; j++) { acc[i * FN + j] = frag_mma(af, bf[j], acc[i * FN + j]); }
            }
        }
    } else if (NBUF == 1u) {
        for (var k = 0u; k < p.K; k += BK) {
            workgroupBarrier();
            fetch(am0, bn0, k, lid);
            stash(0u, lid);
            workgroupBarrier();
            for (var kk = 0u; kk < BK; kk += 16u) {
                var bf: array<RIGHT, FN>;
                for (var j = 0u; j < FN; j++) { bf[j] = fb_s((0u * BN + sn0 + j * 16u) * LDS + kk, LDS); }
                for (var i = 0u; i < FM; i++) {
                    let af = fa_s((0u * BM + sm0 + i * 16u) * LDS + kk, LDS);
                    for (var j = 0u; j < FN; j++) { acc[i * FN + j] = frag_mma(af, bf[j], acc[i * FN + j]); }
                }
            }
        }
    } else {
        fetch(am0, bn0, 0u, lid);
        stash(0u, lid);
        workgroupBarrier();
        var buf = 0u;
        for (var k = 0u; k < p.K; k += BK) {
            let more = k + BK < p.K;
            if (more) { fetch(am0, bn0, k + BK, lid); }
            for (var kk = 0u; kk < BK; kk += 16u) {
                var bf: array<RIGHT, FN>;
                for (var j = 0u; j < FN; j++) { bf[j] = fb_s((buf * BN + sn0 + j * 16u) * LDS + kk, LDS); }
                for (var i = 0u; i < FM; i++) {
                    let af = fa_s((buf * BM + sm0 + i * 16u) * LDS + kk, LDS);
                    for (var j = 0u; j < FN; j++) { acc[i * FN + j] = frag_mma(af, bf[j], acc[i * FN + j]); }
                }
            }
            if (more) { stash(1u - buf, lid); }
            workgroupBarrier();
            buf = 1u - buf;
        }
    }
    for (var f = 0u; f < FM * FN; f++) {
        frag_store_out(acc[f], (om0 + sm0 + (f / FN) * 16u) * p.N + on0 + sn0 + (f % FN) * 16u, p.N);
    }
}

//@@ subgroup matrix
alias LEFT = subgroup_matrix_left<f16, 16, 16>;
alias RIGHT = subgroup_matrix_right<f16, 16, 16>;
alias ACC = subgroup_matrix_result<f32, 16, 16>;
fn frag_init(lane: u32) {}
fn frag_zero() -> ACC { return ACC(); }
fn frag_mma(x: LEFT, y: RIGHT, c: ACC) -> ACC { return subgroupMatrixMultiplyAccumulate(x, y, c); }
fn fa_s(off: u32, ld: u32) -> LEFT { return subgroupMatrixLoad<LEFT, row_major>(&As, off, ld); }
fn fb_s(off: u32, ld: u32) -> RIGHT { return subgroupMatrixLoad<RIGHT, col_major>(&Bs, off, ld); }
fn frag_store_out(c: ACC, off: u32, ld: u32) { subgroupMatrixStore<row_major>(&out, off, c, ld); }
//@@ subgroup matrix global
fn fa_g(off: u32, ld: u32) -> LEFT { return subgroupMatrixLoad<LEFT, row_major>(&a, off, ld); }
fn fb_g(off: u32, ld: u32) -> RIGHT { return subgroupMatrixLoad<RIGHT, col_major>(&b, off, ld); }
//@@ subgroup matrix stub
fn fa_g(off: u32, ld: u32) -> LEFT { return LEFT(); } // staged modes: a and b are not f16 arrays
fn fb_g(off: u32, ld: u32) -> RIGHT { return RIGHT(); }
//@@ scalar
// The same fragments in scalar code (CPU adapters): lane `frag_lane` of 32 holds elements lane,
// lane + 32, .. of a 16 x 16 result, row-major; a fragment "load" keeps its offset, stride and source.
alias LEFT = vec3<u32>;
alias RIGHT = vec3<u32>;
alias ACC = array<f32, 8>;
var<private> frag_lane: u32;
fn frag_init(lane: u32) { frag_lane = lane; }
fn frag_zero() -> ACC { return ACC(); }
fn rd(src: u32, i: u32) -> f32 {
    if (src == 0u) { return f32(As[i]); }
    if (src == 1u) { return f32(Bs[i]); }
    if (src == 2u) { return rdg_a(i); }
    return rdg_b(i);
}
fn frag_mma(x: LEFT, y: RIGHT, c: ACC) -> ACC {
    var r = c;
    for (var q = 0u; q < 8u; q++) {
        let e = frag_lane + q * 32u;
        let ra = x.x + (e / 16u) * x.y;
        let cb = y.x + (e % 16u) * y.y;
        var s = r[q];
        for (var i = 0u; i < 16u; i++) { s = fma(rd(x.z, ra + i), rd(y.z, cb + i), s); }
        r[q] = s;
    }
    return r;
}
fn fa_s(off: u32, ld: u32) -> LEFT { return vec3<u32>(off, ld, 0u); }
fn fb_s(off: u32, ld: u32) -> RIGHT { return vec3<u32>(off, ld, 1u); }
fn fa_g(off: u32, ld: u32) -> LEFT { return vec3<u32>(off, ld, 2u); }
fn fb_g(off: u32, ld: u32) -> RIGHT { return vec3<u32>(off, ld, 3u); }
fn frag_store_out(c: ACC, off: u32, ld: u32) {
    for (var q = 0u; q < 8u; q++) {
        let e = frag_lane + q * 32u;
        out[off + (e / 16u) * ld + e % 16u] = c[q];
    }
}
//@@ scalar global
fn rdg_a(i: u32) -> f32 { return f32(a[i]); }
fn rdg_b(i: u32) -> f32 { return f32(b[i]); }
//@@ scalar staged
fn rdg_a(i: u32) -> f32 { return 0.0; }
fn rdg_b(i: u32) -> f32 { return 0.0; }
