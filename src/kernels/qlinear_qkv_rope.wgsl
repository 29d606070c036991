// The attention inputs of one decode token through a quantized q/k/v weight, in one pass: the
// quantized twin of fused_linear_qkv_rope.wgsl. The RMSNorm of x, the product with the stacked
// weight W [C, K] (C = (Hq + 2 Hkv) hd) in its GGUF blocks, its bias, then q and k rotated, q
// written to q [Hq, 1, hd], k into the key cache and v into the value cache at row pos. A lane
// group computes a rotation pair of rows (fused_linear_qkv_rope.wgsl's pair_of), reading each
// row's blocks as qlinear.wgsl's gemv does: consecutive 8-element pieces across the group's lanes,
// four pieces of each row in flight; x and gamma loaded once for both rows.
// This file holds w's binding and the "product" (row_at, term); the prelude (src/ops/qlinear.c)
// supplies `const FMT: u32` and qlinear.wgsl's "decoders" section (rd32 .. piece, reading the `w`
// binding below), `const WG: u32`, ldBias(i), lib_rowsum.wgsl's section and
// fused_linear_qkv_rope.wgsl's sections "params" (Params, the other bindings), "rope pairs"
// (cos_sin, pair_of, put_pair) and "entries" (main, solo). x, gamma, inv_freq and the outputs are
// f32; offsets of x and gamma in vec4 units, of W in bytes, the others in elements (the caches' at
// row pos of head 0).

@group(0) @binding(2) var<storage, read> w: array<u32>;

// The byte where weight row n's blocks start.
fn row_at(n: u32) -> u32 { return p.off_w + n * p.row_bytes; }

// Dot-product terms of piece g (columns 8g .. 8g + 7: unit g / 4, quarter g % 4) for the rows
// starting at bytes r0 and r1, and x's share of the sum of squares.
fn term(r0: u32, r1: u32, g: u32) -> vec3<f32> {
    let a = piece(r0, g >> 2u, g & 3u);
    let b = piece(r1, g >> 2u, g & 3u);
    let x0 = x[p.off_x + 2u * g];
    let x1 = x[p.off_x + 2u * g + 1u];
    let y0 = x0 * gam[p.off_g + 2u * g];
    let y1 = x1 * gam[p.off_g + 2u * g + 1u];
    return vec3<f32>(dot(a.a, y0) + dot(a.b, y1), dot(b.a, y0) + dot(b.b, y1), dot(x0, x0) + dot(x1, x1));
}

// ---- entry blocks ----
// The entry `blocks` (WGT_QLINEAR_QKV_BLOCKS, Q8_0 and Q4_0): a lane per whole block as
// qlinear_fused.wgsl's entries `blocks` and `rows` (the prelude pastes its "block words": the
// aligned words holding a block), both rows of a pair from the same x * gamma, staged once a
// workgroup (a block's 8 vec4s 9 apart), x's sum of squares summed over the workgroup's staging
// lanes. p.tpr lanes a pair, WG / p.tpr pairs a workgroup; the prelude's XS is K / 4 + K / 32.
var<workgroup> xq: array<vec4<f32>, XS>;

@compute @workgroup_size(WG)
fn blocks(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let slots = WG / p.tpr;
    let lane = lid % p.tpr;
    let s = (wid.x + wid.y * nwg.x) * slots + lid / p.tpr;
    let units = p.K / 32u;
    let bsz = select(18u, 34u, FMT == Q8_0);
    let pr = pair_of(min(s, p.S - 1u)); // pairs past S read the last one's rows and write nothing
    let r0 = row_at(pr.x * p.hd + pr.y);
    let r1 = row_at(pr.x * p.hd + pr.z);
    var u = lane;
    var a0: BlockWords;
    var a1: BlockWords;
    if (u < units) { a0 = blk_load(r0 + u * bsz); a1 = blk_load(r1 + u * bsz); }
    var ss = 0.0; // x's sum of squares over the columns this invocation stages, after the loads
    let kv = p.K / 4u;
    var c = lid;
    for (; c + 3u * WG < kv; c += 4u * WG) { // four vec4s' loads together (one wait for the L2)
        let c1 = c + WG;
        let c2 = c + 2u * WG;
        let c3 = c + 3u * WG;
        let v0 = x[p.off_x + c];
        let v1 = x[p.off_x + c1];
        let v2 = x[p.off_x + c2];
        let v3 = x[p.off_x + c3];
        let g0 = gam[p.off_g + c];
        let g1 = gam[p.off_g + c1];
        let g2 = gam[p.off_g + c2];
        let g3 = gam[p.off_g + c3];
        ss += (dot(v0, v0) + dot(v1, v1)) + (dot(v2, v2) + dot(v3, v3));
        xq[c + (c >> 3u)] = v0 * g0;
        xq[c1 + (c1 >> 3u)] = v1 * g1;
        xq[c2 + (c2 >> 3u)] = v2 * g2;
        xq[c3 + (c3 >> 3u)] = v3 * g3;
    }
    for (; c < kv; c += WG) {
        let v = x[p.off_x + c];
        ss += dot(v, v);
        xq[c + (c >> 3u)] = v * gam[p.off_g + c];
    }
    red[lid] = vec4<f32>(rsum(ss), 0.0, 0.0, 0.0);
    workgroupBarrier();
    var ssq = 0.0;
    let sgs = rsize();
    for (var k = 0u; k < WG; k += sgs) { ssq += red[k].x; }
    workgroupBarrier(); // every invocation has read red before row_share writes it
    var acc = vec2<f32>(0.0);
    loop {
        if (u >= units) { break; }
        let b0 = a0;
        let b1 = a1;
        let o = u * bsz;
        let un = u + p.tpr;
        if (un < units) { a0 = blk_load(r0 + un * bsz); a1 = blk_load(r1 + un * bsz); }
        let xi = u * 9u;
        let x0 = xq[xi];
        let x1 = xq[xi + 1u];
        let x2 = xq[xi + 2u];
        let x3 = xq[xi + 3u];
        let x4 = xq[xi + 4u];
        let x5 = xq[xi + 5u];
        let x6 = xq[xi + 6u];
        let x7 = xq[xi + 7u];
        acc += vec2<f32>(blk_dot_x(b0, r0 + o, x0, x1, x2, x3, x4, x5, x6, x7),
                         blk_dot_x(b1, r1 + o, x0, x1, x2, x3, x4, x5, x6, x7));
        u = un;
    }
    let sg = row_share(lid, lane, vec4<f32>(acc, 0.0, 0.0));
    if (lane == 0u && s < p.S) {
        put_pair(pr, vec3<f32>(row_total(lid, sg).xy, ssq));
    }
}
