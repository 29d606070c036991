// Decode attention over every active slot of a wgt_batch in one dispatch (src/models/batch_attn.c):
// R decode rows, each of its own sequence, whose keys and values live in the slot's region of one
// cache per layer, kc / vc [n_slots, Hkv, ctx, D] f32 contiguous. Row r is at position pos[r] of
// slot slot[r]: it sees the slot's keys 0 .. pos - 1 from the cache and its own new key (kn, vn),
// and the workgroups of the first query head of each GQA group write that new key and value into
// the cache at pos (no other workgroup reads that place in this dispatch). One workgroup per
// (row, query head); query head h reads kv head h / group: GQA without copies. The keys go in
// chunks of WG with a running (online) softmax, so any length up to ctx works; the products with
// V spread as attention_decode.wgsl's (4 value features an invocation, keys strided over chunks).
// out [R, Hq * D] f32 contiguous from element off_out. q, kn, vn: f32 rows with unit feature
// stride, element (h, r, d) at off + h * s_h + r * s_r + d.
// The prelude supplies WG (the workgroup size, a power of two >= 64) and lib_attention.wgsl's nan
// (is_nan, nmax, neg_inf reading p.zero) and reduce (reduce_max, reduce_sum over red) sections,
// attention_decode.wgsl's too.

struct Params {
    R: u32, Hq: u32, Hkv: u32, D: u32,
    ctx: u32, scale: f32, group: u32, zero: u32,
    off_q: u32, sq_h: u32, sq_r: u32, off_k: u32,
    sk_h: u32, sk_r: u32, off_v: u32, sv_h: u32,
    sv_r: u32, off_pos: u32, off_slot: u32, off_out: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> kn: array<f32>;
@group(0) @binding(3) var<storage, read> vn: array<f32>;
@group(0) @binding(4) var<storage, read> info: array<i32>;
@group(0) @binding(5) var<storage, read_write> kc: array<f32>;
@group(0) @binding(6) var<storage, read_write> vc: array<f32>;
@group(0) @binding(7) var<storage, read_write> out: array<f32>;

var<workgroup> qs: array<f32, 256>;
var<workgroup> sc: array<f32, WG>;
var<workgroup> red: array<vec4<f32>, WG>;

// Value features d0 .. d0 + 3 of key j (the cache's before pos, the row's own at pos; zeros past D).
fn ldv4(cb: u32, vb: u32, pos: u32, j: u32, d0: u32) -> vec4<f32> {
    var o = vec4<f32>(0.0);
    for (var i = 0u; i < 4u; i++) {
        if (d0 + i < p.D) {
            if (j < pos) { o[i] = vc[cb + j * p.D + d0 + i]; } else { o[i] = vn[vb + d0 + i]; }
        }
    }
    return o;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * nwg.x; // uniform in the workgroup
    if (row >= p.R * p.Hq) { return; }
    let r = row / p.Hq;
    let h = row - r * p.Hq;
    let hk = h / p.group;
    let pos = u32(info[p.off_pos + r]);
    let slot = u32(info[p.off_slot + r]);
    let cb = (slot * p.Hkv + hk) * p.ctx * p.D; // the slot's cache of kv head hk
    let qb = p.off_q + h * p.sq_h + r * p.sq_r;
    let kb = p.off_k + hk * p.sk_h + r * p.sk_r;
    let vb = p.off_v + hk * p.sv_h + r * p.sv_r;
    for (var d = lid; d < p.D; d += WG) { qs[d] = q[qb + d] * p.scale; }
    if (h == hk * p.group) { // the new key and value into the cache
        for (var d = lid; d < p.D; d += WG) {
            kc[cb + pos * p.D + d] = kn[kb + d];
            vc[cb + pos * p.D + d] = vn[vb + d];
        }
    }
    workgroupBarrier();
    let n = pos + 1u;
    let ninf = neg_inf();
    let DV4 = (p.D + 3u) / 4u;
    let C = WG / DV4;
    let t4 = lid % DV4;
    let c = lid / DV4;
    let d0 = t4 * 4u;
    var M = ninf;
    var l = 0.0;
    var acc = vec4<f32>(0.0);
    for (var j0 = 0u; j0 < n; j0 += WG) {
        let j = j0 + lid;
        var s = ninf;
        if (j < n) {
            s = 0.0;
            if (j < pos) {
                let kr = cb + j * p.D;
                for (var d = 0u; d < p.D; d++) { s = s + qs[d] * kc[kr + d]; }
            } else {
                for (var d = 0u; d < p.D; d++) { s = s + qs[d] * kn[kb + d]; }
            }
        }
        let cm = reduce_max(s, lid);
        let nm = nmax(M, cm);
        let a = select(exp(M - nm), 0.0, M == ninf); // l and acc are 0 while M is -inf
        let e = select(exp(s - nm), 0.0, s == ninf);
        sc[lid] = e;
        let cl = reduce_sum(e, lid); // its barriers also publish sc
        l = l * a + cl;
        acc = acc * a;
        if (c < C) {
            for (var jj = c; jj < WG && j0 + jj < n; jj += C) { acc = acc + sc[jj] * ldv4(cb, vb, pos, j0 + jj, d0); }
        }
        M = nm;
        workgroupBarrier(); // sc is rewritten by the next chunk
    }
    red[lid] = acc;
    workgroupBarrier();
    if (c == 0u) {
        var t = acc;
        for (var cc = 1u; cc < C; cc++) { t = t + red[cc * DV4 + t4]; }
        let o = t / l;
        let ob = p.off_out + (r * p.Hq + h) * p.D;
        for (var i = 0u; i < 4u; i++) {
            if (d0 + i < p.D) { out[ob + d0 + i] = o[i]; }
        }
    }
}
