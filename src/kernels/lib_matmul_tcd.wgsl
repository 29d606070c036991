// Fragment operations of src/kernels/matmul_tcd.wgsl, one section per implementation (the prelude
// built by src/ops/matmul_tcd.c appends one): SM x SK fragments of A (rows along k in `a`, row
// stride ld), SK x SN of B (columns along k in `b`, column stride ld), their product accumulated in
// f32 by the SGS invocations of a subgroup, and its stores (row-major, row stride ld).

// ---- frag subgroup matrix ----
alias LEFT = subgroup_matrix_left<f16, SK, SM>;
alias RIGHT = subgroup_matrix_right<f16, SN, SK>;
alias ACC = subgroup_matrix_result<f32, SN, SM>;
fn frag_init(lane: u32) {}
fn frag_zero() -> ACC { return ACC(); }
fn frag_a(off: u32, ld: u32) -> LEFT { return subgroupMatrixLoad<LEFT, row_major>(&a, off, ld); }
fn frag_b(off: u32, ld: u32) -> RIGHT { return subgroupMatrixLoad<RIGHT, col_major>(&b, off, ld); }
fn frag_mma(x: LEFT, y: RIGHT, c: ACC) -> ACC { return subgroupMatrixMultiplyAccumulate(x, y, c); }
fn frag_store_cs(c: ACC, off: u32) { subgroupMatrixStore<row_major>(&Cs, off, c, SN); }
fn frag_store_out(c: ACC, off: u32, ld: u32) { subgroupMatrixStore<row_major>(&out, off, c, ld); }

// ---- frag scalar ----
// The same fragments without subgroup matrices (tests on devices without them): invocation `lane`
// of the SGS holds elements lane, lane + SGS, .. of the SM x SN result (row-major); a fragment
// "load" is its offset and stride.
const FE: u32 = SM * SN / SGS;
alias LEFT = vec2<u32>;
alias RIGHT = vec2<u32>;
alias ACC = array<f32, FE>;
var<private> frag_lane: u32;
fn frag_init(lane: u32) { frag_lane = lane; }
fn frag_zero() -> ACC { return ACC(); }
fn frag_a(off: u32, ld: u32) -> LEFT { return vec2<u32>(off, ld); }
fn frag_b(off: u32, ld: u32) -> RIGHT { return vec2<u32>(off, ld); }
fn frag_mma(x: LEFT, y: RIGHT, c: ACC) -> ACC {
    var r = c;
    for (var q = 0u; q < FE; q++) {
        let e = frag_lane + q * SGS;
        let ra = x.x + (e / SN) * x.y;
        let cb = y.x + (e % SN) * y.y;
        var s = r[q];
        for (var i = 0u; i < SK; i++) { s = fma(f32(a[ra + i]), f32(b[cb + i]), s); }
        r[q] = s;
    }
    return r;
}
fn frag_store_cs(c: ACC, off: u32) {
    for (var q = 0u; q < FE; q++) { Cs[off + frag_lane + q * SGS] = c[q]; }
}
fn frag_store_out(c: ACC, off: u32, ld: u32) {
    for (var q = 0u; q < FE; q++) {
        let e = frag_lane + q * SGS;
        out[off + (e / SN) * ld + e % SN] = c[q];
    }
}
