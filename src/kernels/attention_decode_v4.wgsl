// Decode attention (one query row a head, at most SMAX visible keys, no mask) with q, k and v f32
// and read as 16-byte words: attention_decode.wgsl's phases (the scores one key an invocation, the
// softmax's two reductions, the values 4 features an invocation with the keys split among the
// rest), but a key's row is D4 vector loads issued together (attention_decode.wgsl reads four
// scalars a vector, four vectors at a time) and the value loop keeps eight rows in flight. On the
// H200 a decode step's attention is latency, not bytes (< 100 KB a head): fewer dependent rounds
// of loads is the aim. src/ops/attention.c takes it under WGT_ATTENTION_DECODE=v4 where q, k and v
// are f32 with rows of whole 16-byte words; everything else keeps attention_decode.wgsl.
// Offsets and strides in p are in vec4 units (the caller divides them; the last strides are 1).
// The prelude supplies lib_attention.wgsl's params, nan and reduce sections, WG and D4 (the head
// size in vec4s, a multiple of 4) and SMAX (the most visible keys the caller sends, a multiple of 256),
// and PRE (1: each invocation reads q into registers itself and issues its first eight value rows'
// loads before the scores, so q, k and v cost one round of latency, not three: workgroups of at
// most 256 with D4 <= 32; 0: q staged in qs, the values loaded after the softmax).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> qs: array<vec4<f32>, D4>;
const QR: u32 = select(1u, D4, PRE != 0u);
var<workgroup> sc: array<f32, SMAX>;
var<workgroup> red: array<vec4<f32>, WG>;

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
    let DV4 = p.Dv / 4u;
    let C = WG / DV4;
    let t4 = lid % DV4;
    let c = lid / DV4;
    let vr = vb + t4;
    // PRE: this invocation's first eight value rows (c, c + C, ..) requested now, used after the softmax
    var vpre = array<vec4<f32>, 8>();
    if (PRE != 0u && c < C) {
        for (var i = 0u; i < 8u; i++) {
            let j = c + i * C;
            if (j < n) { vpre[i] = v[vr + j * p.sv[2]]; }
        }
    }
    var qr = array<vec4<f32>, QR>();
    if (PRE != 0u) {
        for (var d = 0u; d < QR; d++) { qr[d] = q[qb + d] * p.scale; }
    } else {
        for (var d = lid; d < D4; d += WG) { qs[d] = q[qb + d] * p.scale; }
        workgroupBarrier();
    }
    // scores, one key per invocation at a time, its whole row's loads together
    var m = neg_inf();
    for (var j = lid; j < n; j += WG) {
        let kr = kb + j * p.sk[2];
        var s = 0.0;
        for (var d = 0u; d < D4; d += 4u) {
            let k0 = k[kr + d];
            let k1 = k[kr + d + 1u];
            let k2 = k[kr + d + 2u];
            let k3 = k[kr + d + 3u];
            if (PRE != 0u) {
                s += (dot(qr[d], k0) + dot(qr[d + 1u], k1)) + (dot(qr[d + 2u], k2) + dot(qr[d + 3u], k3));
            } else {
                s += (dot(qs[d], k0) + dot(qs[d + 1u], k1)) + (dot(qs[d + 2u], k2) + dot(qs[d + 3u], k3));
            }
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
    // out = sum_j e_j v_j / L: a vec4 of features an invocation, keys strided over C = WG / DV4 chunks
    var acc = vec4<f32>(0.0);
    if (c < C) {
        var j = c;
        if (PRE != 0u) { // the eight rows loaded first
            for (var i = 0u; i < 8u; i++) {
                if (j < n) { acc += sc[j] * vpre[i]; }
                j += C;
            }
        }
        for (; j + 7u * C < n; j += 8u * C) { // eight rows in flight
            let v0 = v[vr + j * p.sv[2]];
            let v1 = v[vr + (j + C) * p.sv[2]];
            let v2 = v[vr + (j + 2u * C) * p.sv[2]];
            let v3 = v[vr + (j + 3u * C) * p.sv[2]];
            let v4 = v[vr + (j + 4u * C) * p.sv[2]];
            let v5 = v[vr + (j + 5u * C) * p.sv[2]];
            let v6 = v[vr + (j + 6u * C) * p.sv[2]];
            let v7 = v[vr + (j + 7u * C) * p.sv[2]];
            acc += ((sc[j] * v0 + sc[j + C] * v1) + (sc[j + 2u * C] * v2 + sc[j + 3u * C] * v3)) +
                   ((sc[j + 4u * C] * v4 + sc[j + 5u * C] * v5) + (sc[j + 6u * C] * v6 + sc[j + 7u * C] * v7));
        }
        for (; j < n; j += C) { acc += sc[j] * v[vr + j * p.sv[2]]; }
    }
    red[lid] = acc;
    workgroupBarrier();
    if (c == 0u) {
        var t = acc;
        for (var cc = 1u; cc < C; cc++) { t = t + red[cc * DV4 + t4]; }
        let o = select(t / L, vec4<f32>(0.0), n == 0u);
        let ob = p.pad2 + row * p.Dv + t4 * 4u; // out is [B, Hq, 1, Dv] contiguous from element pad2
        out[ob] = o.x;
        out[ob + 1u] = o.y;
        out[ob + 2u] = o.z;
        out[ob + 3u] = o.w;
    }
}
