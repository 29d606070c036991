// Fragment operations of src/kernels/matmul_tc.wgsl, one section per implementation (the prelude
// built by src/ops/matmul.c appends one): the product of an SM x SK tile of As (row-major, row
// stride LDA) and an SK x SN tile of Bs (stored [n][k]: column-major, column stride LDB),
// accumulated in f32 by the SGS invocations of one subgroup, and its store into Cs (row stride SN)
// or straight into out (row stride ld). LEFT, RIGHT and ACC are the fragment types.

// ---- frag subgroup matrix ----
alias LEFT = subgroup_matrix_left<TT, SK, SM>;
alias RIGHT = subgroup_matrix_right<TT, SN, SK>;
alias ACC = subgroup_matrix_result<f32, SN, SM>;
fn frag_init(lane: u32) {}
fn frag_zero() -> ACC { return ACC(); }
fn frag_a(off: u32) -> LEFT { return subgroupMatrixLoad<LEFT, row_major>(&As, off, LDA); }
fn frag_b(off: u32) -> RIGHT { return subgroupMatrixLoad<RIGHT, col_major>(&Bs, off, LDB); }
fn frag_mma(a: LEFT, b: RIGHT, c: ACC) -> ACC { return subgroupMatrixMultiplyAccumulate(a, b, c); }
fn frag_store(c: ACC, off: u32) { subgroupMatrixStore<row_major>(&Cs, off, c, SN); }
fn frag_store_out(c: ACC, off: u32, ld: u32) { subgroupMatrixStore<row_major>(&out, off, c, ld); }

// ---- frag scalar ----
// The same tiles without subgroup matrices: invocation `lane` of the subgroup's SGS holds elements
// lane, lane + SGS, .. of the SM x SN result (row-major); a fragment "load" is its tile offset.
const FE: u32 = SM * SN / SGS;
alias LEFT = u32;
alias RIGHT = u32;
alias ACC = array<f32, FE>;
var<private> frag_lane: u32;
fn frag_init(lane: u32) { frag_lane = lane; }
fn frag_zero() -> ACC { return ACC(); }
fn frag_a(off: u32) -> LEFT { return off; }
fn frag_b(off: u32) -> RIGHT { return off; }
fn frag_mma(a: LEFT, b: RIGHT, c: ACC) -> ACC {
    var r = c;
    for (var q = 0u; q < FE; q++) {
        let e = frag_lane + q * SGS;
        let row = e / SN;
        let col = e % SN;
        var s = r[q];
        for (var i = 0u; i < SK; i++) { s = fma(f32(As[a + row * LDA + i]), f32(Bs[b + col * LDB + i]), s); }
        r[q] = s;
    }
    return r;
}
fn frag_store(c: ACC, off: u32) {
    for (var q = 0u; q < FE; q++) { Cs[off + frag_lane + q * SGS] = c[q]; }
}
fn frag_store_out(c: ACC, off: u32, ld: u32) {
    for (var q = 0u; q < FE; q++) {
        let e = frag_lane + q * SGS;
        out[off + (e / SN) * ld + e % SN] = c[q];
    }
}
