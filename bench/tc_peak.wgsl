// The tensor cores' own rate through subgroup matrices (bench/tc_peak.c): each subgroup of a
// workgroup of 4 multiplies two left and two right fragments into four accumulators ITER times,
// with the fragments loaded once (LOADS 0) or from workgroup memory before every product (LOADS 1:
// matmul_tc.wgsl's inner loop without its global loads; offsets the compiler cannot hoist). The prelude sets TT (operands), TR (the
// accumulators), SM, SN, SK and LOADS.
override ITER: u32 = 1024u;
alias LEFT = subgroup_matrix_left<TT, SK, SM>;
alias RIGHT = subgroup_matrix_right<TT, SN, SK>;
alias ACC = subgroup_matrix_result<TR, SN, SM>;
const LD: u32 = 64u + 8u; // a row of the staged tile, padded as matmul_tc's
var<workgroup> S: array<TT, 64u * LD + 128u>; // + the offsets k below
@group(0) @binding(1) var<storage, read_write> out: array<TR>;

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    for (var i = lid; i < 64u * LD + 128u; i += 128u) { S[i] = TT(f32(i % 7u) * 0.001); }
    workgroupBarrier();
    let sg = lid / 32u;
    let o = sg * 16u * LD;
    var a0 = subgroupMatrixLoad<LEFT, row_major>(&S, o, LD);
    var a1 = subgroupMatrixLoad<LEFT, row_major>(&S, o + SK, LD);
    var b0 = subgroupMatrixLoad<RIGHT, col_major>(&S, o + 2u * SK, LD);
    var b1 = subgroupMatrixLoad<RIGHT, col_major>(&S, o + 3u * SK, LD);
    var c0 = ACC();
    var c1 = ACC();
    var c2 = ACC();
    var c3 = ACC();
    let sh = u32(f32(out[0]) != 0.0); // 0, unknown to the compiler: the offsets below cannot be hoisted
    for (var i = 0u; i < ITER; i++) {
        if (LOADS == 1u) {
            let k = ((i + sh) % 3u) * 16u;
            a0 = subgroupMatrixLoad<LEFT, row_major>(&S, o + k, LD);
            a1 = subgroupMatrixLoad<LEFT, row_major>(&S, o + k + SK, LD);
            b0 = subgroupMatrixLoad<RIGHT, col_major>(&S, o + k + 2u * SK, LD);
            b1 = subgroupMatrixLoad<RIGHT, col_major>(&S, o + k + 3u * SK, LD);
        }
        c0 = subgroupMatrixMultiplyAccumulate(a0, b0, c0);
        c1 = subgroupMatrixMultiplyAccumulate(a0, b1, c1);
        c2 = subgroupMatrixMultiplyAccumulate(a1, b0, c2);
        c3 = subgroupMatrixMultiplyAccumulate(a1, b1, c3);
    }
    let base = (wid.x * 4u + sg) * 4u * SM * SN;
    subgroupMatrixStore<row_major>(&out, base, c0, SN);
    subgroupMatrixStore<row_major>(&out, base + SM * SN, c1, SN);
    subgroupMatrixStore<row_major>(&out, base + 2u * SM * SN, c2, SN);
    subgroupMatrixStore<row_major>(&out, base + 3u * SM * SN, c3, SN);
}
