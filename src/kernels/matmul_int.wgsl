// Integer matrix product: out[z, m, n0 + n] = sum_k A[z, m, k] B[z, k, n] (+ C[z, m, n]), in i32
// arithmetic that wraps as two's complement: bit for bit the reference's int64 sum cut to 32 bits,
// for i32 and u32 results alike. A, B and C are read through strided loaders (ldA, ldB, ldC from
// the prelude: any integer dtype but i64, as i32); out is contiguous 32-bit words, row stride ldo.
// One invocation per output element (correctness first: no tiles); WG from the prelude.
// Params, p, batch_offsets and the bindings (out as u32 words) are lib_matmul.wgsl's sections
// "params" and "bindings int", in the prelude.

// Workgroups spread over x then y (op_grid), batches over z; p.M * p.N < 2^32 (the op checks).
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let idx = (wid.x + wid.y * nwg.x) * WG + lid;
    if (idx >= p.M * p.N) { return; }
    let m = idx / p.N;
    let n = idx % p.N;
    let z = wid.z + p.z0;
    let bo = batch_offsets(z);
    let ar = p.off_a + bo.x + m * p.sam;
    let bc = p.off_b + bo.y + n * p.sbn;
    var acc = 0i;
    for (var k = 0u; k < p.K; k++) { acc += ldA(ar + k * p.sak) * ldB(bc + k * p.sbk); }
    if (p.has_c != 0u) { acc += ldC(p.off_c + bo.z + m * p.scm + n * p.scn); }
    out[(z * p.M + m) * p.ldo + p.n0 + n] = bitcast<u32>(acc);
}
