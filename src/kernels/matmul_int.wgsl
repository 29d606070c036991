// Integer matrix product: out[z, m, n0 + n] = sum_k A[z, m, k] B[z, k, n] (+ C[z, m, n]), in i32
// arithmetic that wraps as two's complement: bit for bit the reference's int64 sum cut to 32 bits,
// for i32 and u32 results alike. A, B and C are read through strided loaders (ldA, ldB, ldC from
// the prelude: any integer dtype but i64, as i32); out is contiguous 32-bit words, row stride ldo.
// One invocation per output element (correctness first: no tiles); WG from the prelude.
// The parameters are src/kernels/matmul.wgsl's (the same struct on the host).

struct Params {
    M: u32, N: u32, K: u32, batch: u32,
    off_a: u32, off_b: u32, off_c: u32, has_c: u32,
    sam: u32, sak: u32, sbk: u32, sbn: u32,
    scm: u32, scn: u32, alpha: f32, beta: f32,
    bshape: vec4<u32>,
    bsa: vec4<u32>,
    bsb: vec4<u32>,
    bsc: vec4<u32>,
    ldo: u32, n0: u32, z0: u32, tpr: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<u32>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

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
