// Accumulator loads of src/kernels/matmul_tcq.wgsl (its prelude, src/ops/matmul_tcq.c, appends one
// section after lib_matmul_tcd.wgsl's fragments): acc_load(off, ld) reads an SM x SN f32 result
// fragment from Cs (row-major, row stride ld), the bias rows the accumulators start from.

// ---- acc subgroup matrix ----
fn acc_load(off: u32, ld: u32) -> ACC { return subgroupMatrixLoad<ACC, row_major>(&Cs, off, ld); }

// ---- acc scalar ----
// Element lane + q * SGS of the fragment (lib_matmul_tcd.wgsl's "frag scalar" layout).
fn acc_load(off: u32, ld: u32) -> ACC {
    var r: ACC;
    for (var q = 0u; q < FE; q++) {
        let e = frag_lane + q * SGS;
        r[q] = Cs[off + (e / SN) * ld + e % SN];
    }
    return r;
}
