// Fragment operations of src/kernels/matmul_tcd.wgsl, one section per implementation (the prelude
// built by src/ops/matmul_tcd.c appends one): SM x SK fragments of A (rows along k in `a`, row
// stride ld), SK x SN of B (columns along k in `b`, column stride ld), their product accumulated in
// f32 by the SGS invocations of a subgroup, and its stores (row-major, row stride ld). frag_a / frag_b
// load from storage (MODE 0: sections "* global"), frag_as / frag_bs from the staged As / Bs.

// ---- word f16 ----
// word(w, j): the j-th u32 of a word of a and b (AW): fragments from storage (never called),
fn word(w: AW, j: u32) -> u32 { return 0u; }

// ---- word u32 ----
// 4-byte staged words,
fn word(w: AW, j: u32) -> u32 { return w; }

// ---- word vec4 ----
// 16-byte staged words.
fn word(w: AW, j: u32) -> u32 { return w[j]; }

// ---- word_a same ----
// word_a(w): a word of a (AWA) as a staged word (AW): the same type,
fn word_a(w: AWA) -> AW { return w; }

// ---- word_a f32 ----
// or two f32 of A rounded to f16 as they are staged (MODE 2, 3: no matmul_half copy of f32 activations).
fn word_a(w: AWA) -> AW { return pack2x16float(w); }

// ---- frag subgroup matrix ----
alias LEFT = subgroup_matrix_left<f16, SK, SM>;
alias RIGHT = subgroup_matrix_right<f16, SN, SK>;
alias ACC = subgroup_matrix_result<f32, SN, SM>;
fn frag_init(lane: u32) {}
fn frag_zero() -> ACC { return ACC(); }
fn frag_as(off: u32, ld: u32) -> LEFT { return subgroupMatrixLoad<LEFT, row_major>(&As, off, ld); }
fn frag_bs(off: u32, ld: u32) -> RIGHT { return subgroupMatrixLoad<RIGHT, col_major>(&Bs, off, ld); }
fn frag_mma(x: LEFT, y: RIGHT, c: ACC) -> ACC { return subgroupMatrixMultiplyAccumulate(x, y, c); }
fn frag_store_cs(c: ACC, off: u32) { subgroupMatrixStore<row_major>(&Cs, off, c, SN); }
fn frag_store_out(c: ACC, off: u32, ld: u32) { subgroupMatrixStore<row_major>(&out, off, c, ld); }

// ---- frag subgroup matrix global ----
fn frag_a(off: u32, ld: u32) -> LEFT { return subgroupMatrixLoad<LEFT, row_major>(&a, off, ld); }
fn frag_b(off: u32, ld: u32) -> RIGHT { return subgroupMatrixLoad<RIGHT, col_major>(&b, off, ld); }

// ---- frag subgroup matrix stub ----
// Staged modes: a and b are not f16 arrays, and main's storage branch never runs.
fn frag_a(off: u32, ld: u32) -> LEFT { return LEFT(); }
fn frag_b(off: u32, ld: u32) -> RIGHT { return RIGHT(); }

// ---- frag scalar ----
// The same fragments without subgroup matrices (tests on devices without them): invocation `lane`
// of the SGS holds elements lane, lane + SGS, .. of the SM x SN result (row-major); a fragment
// "load" is its offset and stride.
const FE: u32 = SM * SN / SGS;
alias LEFT = vec3<u32>; // offset, stride, source (0 a, 1 b, 2 As, 3 Bs)
alias RIGHT = vec3<u32>;
alias ACC = array<f32, FE>;
var<private> frag_lane: u32;
fn frag_init(lane: u32) { frag_lane = lane; }
fn frag_zero() -> ACC { return ACC(); }
fn frag_a(off: u32, ld: u32) -> LEFT { return vec3<u32>(off, ld, 0u); }
fn frag_b(off: u32, ld: u32) -> RIGHT { return vec3<u32>(off, ld, 1u); }
fn frag_as(off: u32, ld: u32) -> LEFT { return vec3<u32>(off, ld, 2u); }
fn frag_bs(off: u32, ld: u32) -> RIGHT { return vec3<u32>(off, ld, 3u); }
fn frag_rd(src: u32, i: u32) -> f32 {
    if (src == 2u) { return f32(As[i]); }
    if (src == 3u) { return f32(Bs[i]); }
    return frag_rd_global(src, i);
}
fn frag_mma(x: LEFT, y: RIGHT, c: ACC) -> ACC {
    var r = c;
    for (var q = 0u; q < FE; q++) {
        let e = frag_lane + q * SGS;
        let ra = x.x + (e / SN) * x.y;
        let cb = y.x + (e % SN) * y.y;
        var s = r[q];
        for (var i = 0u; i < SK; i++) { s = fma(frag_rd(x.z, ra + i), frag_rd(y.z, cb + i), s); }
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

// ---- frag scalar global ----
fn frag_rd_global(src: u32, i: u32) -> f32 { return select(f32(b[i]), f32(a[i]), src == 0u); }

// ---- frag scalar staged ----
fn frag_rd_global(src: u32, i: u32) -> f32 { return 0.0; }
