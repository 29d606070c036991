// Scaled dot-product attention for one query row per head (a decode step) over a short cache:
// one workgroup per (batch, query head) holds all of the row's scores in workgroup memory, so the
// softmax needs two reductions instead of attention.wgsl's per-block passes, and the products with
// V spread over every invocation (4 value features each, keys split among the rest) with four
// loads in flight. No mask; causal sees keys j <= coff. The caller (src/ops/attention.c) takes
// this path for at most SMAX visible keys, else attention.wgsl's key splits. A head that sees no
// key gives zeros, NaN scores give NaN rows as the reference's softmax does.
// The prelude supplies lib_attention.wgsl's params, nan (is_nan, nmax, neg_inf), reduce
// (reduce_max, reduce_sum over red) and ldk4 sections, the loaders ldq, ldk, ldv as
// attention.wgsl's, WG and LOADS4 (true: the score loop's four k loads in flight; sdpa_loads4).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<u32>;
@group(0) @binding(2) var<storage, read> k: array<u32>;
@group(0) @binding(3) var<storage, read> v: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const SMAX: u32 = 256u; // src/ops/attention.c sends at most this many keys

var<workgroup> qs: array<f32, 256>;
var<workgroup> sc: array<f32, SMAX>;
var<workgroup> red: array<vec4<f32>, WG>;

// Value features d0 .. d0 + 3 of key j (zeros past Dv).
fn ldv4(vb: u32, j: u32, d0: u32) -> vec4<f32> {
    let r = vb + j * p.sv[2];
    var o = vec4<f32>(0.0);
    for (var i = 0u; i < 4u; i++) {
        if (d0 + i < p.Dv) { o[i] = ldv(r + (d0 + i) * p.sv[3]); }
    }
    return o;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * nwg.x; // uniform in the workgroup
    if (row >= p.B * p.Hq) { return; }
    let b = row / p.Hq;
    let h = row - b * p.Hq;
    let hk = h / p.group;
    let qb = p.off_q + b * p.sq[0] + h * p.sq[1];
    let kb = p.off_k + b * p.sk[0] + hk * p.sk[1];
    let vb = p.off_v + b * p.sv[0] + hk * p.sv[1];
    var n = p.Lk;
    if (p.causal != 0u) { n = u32(clamp(p.coff + 1, 0, i32(p.Lk))); }
    for (var d = lid; d < p.D; d += WG) { qs[d] = ldq(qb + d * p.sq[3]) * p.scale; }
    workgroupBarrier();
    // scores, one key per invocation at a time
    var m = neg_inf();
    for (var j = lid; j < n; j += WG) {
        let kr = kb + j * p.sk[2];
        var s = 0.0;
        if (p.kvec != 0u) {
            var d = 0u;
            for (; LOADS4 && d + 12u < p.D; d += 16u) { // four loads in flight
                let k0 = ldk4(kr + d);
                let k1 = ldk4(kr + d + 4u);
                let k2 = ldk4(kr + d + 8u);
                let k3 = ldk4(kr + d + 12u);
                s = s + (dot(vec4<f32>(qs[d], qs[d + 1u], qs[d + 2u], qs[d + 3u]), k0) +
                         dot(vec4<f32>(qs[d + 4u], qs[d + 5u], qs[d + 6u], qs[d + 7u]), k1)) +
                        (dot(vec4<f32>(qs[d + 8u], qs[d + 9u], qs[d + 10u], qs[d + 11u]), k2) +
                         dot(vec4<f32>(qs[d + 12u], qs[d + 13u], qs[d + 14u], qs[d + 15u]), k3));
            }
            for (; d < p.D; d += 4u) {
                s = s + dot(vec4<f32>(qs[d], qs[d + 1u], qs[d + 2u], qs[d + 3u]), ldk4(kr + d));
            }
        } else {
            for (var d = 0u; d < p.D; d++) { s = s + qs[d] * ldk(kr + d * p.sk[3]); }
        }
        sc[j] = s;
        m = nmax(m, s);
    }
    let M = reduce_max(m, lid);
    var l = 0.0;
    for (var j = lid; j < n; j += WG) {
        let e = exp(sc[j] - M);
        sc[j] = e;
        l = l + e;
    }
    let L = reduce_sum(l, lid); // its barriers also publish sc
    // out = sum_j e_j v_j / L: 4 features an invocation, keys strided over the C = WG / DV4 chunks
    let DV4 = (p.Dv + 3u) / 4u;
    let C = WG / DV4;
    let t4 = lid % DV4;
    let c = lid / DV4;
    let d0 = t4 * 4u;
    var acc = vec4<f32>(0.0);
    if (c < C) {
        var j = c;
        for (; j + 3u * C < n; j = j + 4u * C) {
            acc = acc + (sc[j] * ldv4(vb, j, d0) + sc[j + C] * ldv4(vb, j + C, d0)) +
                  (sc[j + 2u * C] * ldv4(vb, j + 2u * C, d0) + sc[j + 3u * C] * ldv4(vb, j + 3u * C, d0));
        }
        for (; j < n; j = j + C) { acc = acc + sc[j] * ldv4(vb, j, d0); }
    }
    red[lid] = acc;
    workgroupBarrier();
    if (c == 0u) {
        var t = acc;
        for (var cc = 1u; cc < C; cc++) { t = t + red[cc * DV4 + t4]; }
        let o = select(t / L, vec4<f32>(0.0), n == 0u);
        let ob = p.pad2 + row * p.Dv; // out is [B, Hq, 1, Dv] contiguous from element pad2
        for (var i = 0u; i < 4u; i++) {
            if (d0 + i < p.Dv) { out[ob + d0 + i] = o[i]; }
        }
    }
}

// The barrier-free variant (src/ops/attention.c takes it where wgt_gpu_avoid_barriers says so):
// one invocation per (row, 4 value features), each computing the row's scores itself with a
// running (online) softmax, no workgroup memory. SwiftShader runs a kernel that holds a barrier
// as one coroutine per subgroup and workgroup; this runs as one loop. `main` above is unchanged.
// A score of -inf adds nothing (as main's exp(-inf - M) = 0), all of them give NaN as main does.
@compute @workgroup_size(16)
fn solo(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let DV4 = (p.Dv + 3u) / 4u;
    let idx = (wid.x + wid.y * nwg.x) * 16u + lid;
    let row = idx / DV4;
    if (row >= p.B * p.Hq) { return; }
    let d0 = (idx - row * DV4) * 4u;
    let b = row / p.Hq;
    let h = row - b * p.Hq;
    let hk = h / p.group;
    let qb = p.off_q + b * p.sq[0] + h * p.sq[1];
    let kb = p.off_k + b * p.sk[0] + hk * p.sk[1];
    let vb = p.off_v + b * p.sv[0] + hk * p.sv[1];
    var n = p.Lk;
    if (p.causal != 0u) { n = u32(clamp(p.coff + 1, 0, i32(p.Lk))); }
    let ninf = neg_inf();
    var m = ninf;
    var l = 0.0;
    var acc = vec4<f32>(0.0);
    for (var j = 0u; j < n; j++) {
        let kr = kb + j * p.sk[2];
        var s = 0.0;
        if (p.kvec != 0u) {
            for (var d = 0u; d < p.D; d += 4u) {
                let qv = vec4<f32>(ldq(qb + d * p.sq[3]), ldq(qb + (d + 1u) * p.sq[3]), ldq(qb + (d + 2u) * p.sq[3]),
                                   ldq(qb + (d + 3u) * p.sq[3])) * p.scale;
                s = s + dot(qv, ldk4(kr + d));
            }
        } else {
            for (var d = 0u; d < p.D; d++) { s = s + (ldq(qb + d * p.sq[3]) * p.scale) * ldk(kr + d * p.sk[3]); }
        }
        let mn = nmax(m, s);
        let a = select(exp(m - mn), 0.0, m == ninf);      // l and acc are 0 while m is -inf
        let e = select(exp(s - mn), 0.0, s == ninf && mn == ninf);
        l = l * a + e;
        acc = acc * a + e * ldv4(vb, j, d0);
        m = mn;
    }
    // all scores -inf: l = 0 and 0 / 0 is NaN, as main's exp(-inf - -inf)
    let o = select(acc / l, vec4<f32>(0.0), n == 0u);
    let ob = p.pad2 + row * p.Dv;
    for (var i = 0u; i < 4u; i++) {
        if (d0 + i < p.Dv) { out[ob + d0 + i] = o[i]; }
    }
}
