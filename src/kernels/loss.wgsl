// Row losses: cross_entropy (class indices or probabilities), nll_loss and cosine_similarity.
// A row is one position over the kept dims (x [N, C, d...] without C; cosine: the broadcast shape
// without dim) and C elements one stride apart. One pass over the row: the running max and sum of
// exponentials (online log-sum-exp) and the weighted sums the mode needs, so cross_entropy over a
// large vocabulary reads each logit once. Per row the kernel writes the loss (f32) and the weight
// that the mean divides by; the op reduces those.
//
// Entries: `wg_main`, a workgroup of WG invocations per row (long rows), and `row_main`, one
// invocation per row (short rows, nll_loss's pick).
// The prelude (src/ops/loss.c) supplies lib_index.wgsl, `const WG: u32`, the loaders ldx (x -> f32),
// ldt (target -> f32, probabilities / x2) and ldi (target -> i32, class indices).

struct Params {
    n_rows: u32,
    C: u32,
    mode: u32,        // 0 cross_entropy (indices), 1 cross_entropy (probabilities), 2 nll_loss, 3 cosine
    off_x: u32,       // element offsets within the bindings
    off_t: u32,
    cs_x: u32,        // strides along the row
    cs_t: u32,
    has_w: u32,       // weight [C] (f32, contiguous) bound
    has_ignore: u32,
    ignore: i32,
    ls: f32,          // label smoothing
    eps: f32,         // cosine
    zero: u32,        // 0, opaque to the compiler (builds infinities)
    off_o: u32,       // element offsets of this dispatch's rows in out and outw
    off_ow: u32,
    pad2: u32,
    lx: Layout,       // kept shape with x's strides
    lt: Layout,       // kept shape with the target's (x2's) strides
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<u32>;
@group(0) @binding(2) var<storage, read> ts: array<u32>;
@group(0) @binding(3) var<storage, read> ws: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> outw: array<f32>;
@group(0) @binding(6) var<storage, read_write> err: array<atomic<u32>>;

// m, s: running max and sum of exp(x - m). a, b, c: the mode's sums (cross_entropy: sum w t x and
// sum w t, with t the smoothed target or 1 for label smoothing; cosine: x.y, x.x, y.y).
struct Acc {
    m: f32,
    s: f32,
    a: f32,
    b: f32,
    c: f32,
};

fn inf_f() -> f32 { return bitcast<f32>(p.zero | 0x7f800000u); }

fn acc_empty() -> Acc { return Acc(-inf_f(), 0.0, 0.0, 0.0, 0.0); }

fn weight(c: u32) -> f32 {
    if (p.has_w != 0u) { return bitcast<f32>(ws[c]); }
    return 1.0;
}

// Add element c of the row, whose x value v is already loaded.
fn acc_add(t: Acc, c: u32, v: f32, tb: u32) -> Acc {
    var r = t;
    if (p.mode == 3u) {
        let u = ldt(tb + c * p.cs_t);
        r.a = t.a + v * u;
        r.b = t.b + v * v;
        r.c = t.c + u * u;
        return r;
    }
    if (v > t.m) {
        r.s = t.s * exp(t.m - v) + 1.0;
        r.m = v;
    } else if (!(t.m == -inf_f() && v == -inf_f())) {
        r.s = t.s + exp(v - t.m); // NaN poisons the sum
    }
    if (p.mode == 1u) {
        let tw = weight(c) * (ldt(tb + c * p.cs_t) * (1.0 - p.ls) + p.ls / f32(p.C));
        r.a = t.a + tw * v;
        r.b = t.b + tw;
    } else if (p.ls > 0.0) {
        let w = weight(c);
        r.a = t.a + w * v;
        r.b = t.b + w;
    }
    return r;
}

fn acc_combine(x: Acc, y: Acc) -> Acc {
    var r = Acc(max(x.m, y.m), 0.0, x.a + y.a, x.b + y.b, x.c + y.c);
    if (p.mode != 3u) {
        r.s = x.s * select(exp(x.m - r.m), 1.0, x.m == r.m) + y.s * select(exp(y.m - r.m), 1.0, y.m == r.m);
    }
    return r;
}

// The loss of row o from its sums; writes out[o] and outw[o].
fn finish(o: u32, t: Acc, xb: u32, tb: u32) {
    if (p.mode == 3u) {
        let n1 = sqrt(t.b);
        let n2 = sqrt(t.c);
        out[p.off_o + o] = t.a / (select(n1, p.eps, n1 < p.eps) * select(n2, p.eps, n2 < p.eps));
        outw[p.off_ow + o] = 1.0;
        return;
    }
    var lse = 0.0;
    if (p.mode != 2u) { lse = t.m + log(t.s); }
    if (t.m == inf_f()) { lse = bitcast<f32>(p.zero | 0x7fc00000u); } // inf - inf in PyTorch's x - max
    if (p.mode == 1u) {
        out[p.off_o + o] = -(t.a - lse * t.b);
        outw[p.off_ow + o] = 1.0;
        return;
    }
    let k = ldi(tb);
    if (p.has_ignore != 0u && k == p.ignore) {
        out[p.off_o + o] = 0.0;
        outw[p.off_ow + o] = 0.0;
        return;
    }
    if (k < 0 || u32(k) >= p.C) {
        atomicOr(&err[0], 8u); // the loss bit of the index error word
        out[p.off_o + o] = bitcast<f32>(p.zero | 0x7fc00000u);
        outw[p.off_ow + o] = 0.0;
        return;
    }
    let w = weight(u32(k));
    var loss = -w * (ldx(xb + u32(k) * p.cs_x) - lse);
    if (p.mode == 0u && p.ls > 0.0) {
        loss = (1.0 - p.ls) * loss - p.ls / f32(p.C) * (t.a - lse * t.b);
    }
    out[p.off_o + o] = loss;
    outw[p.off_ow + o] = w;
}

var<workgroup> sh: array<Acc, WG>;

@compute @workgroup_size(WG)
fn wg_main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let o = wid.x + wid.y * groups.x;
    if (o >= p.n_rows) { return; } // uniform per workgroup
    let xb = layout_index(p.lx, o) + p.off_x;
    let tb = layout_index(p.lt, o) + p.off_t;
    var t = acc_empty();
    // four loads in flight before the dependent updates: long rows are memory-bound
    var c = lid;
    for (; c + 3u * WG < p.C; c = c + 4u * WG) {
        let v0 = ldx(xb + c * p.cs_x);
        let v1 = ldx(xb + (c + WG) * p.cs_x);
        let v2 = ldx(xb + (c + 2u * WG) * p.cs_x);
        let v3 = ldx(xb + (c + 3u * WG) * p.cs_x);
        t = acc_add(t, c, v0, tb);
        t = acc_add(t, c + WG, v1, tb);
        t = acc_add(t, c + 2u * WG, v2, tb);
        t = acc_add(t, c + 3u * WG, v3, tb);
    }
    for (; c < p.C; c = c + WG) { t = acc_add(t, c, ldx(xb + c * p.cs_x), tb); }
    sh[lid] = t;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride >> 1u) {
        if (lid < stride) { sh[lid] = acc_combine(sh[lid], sh[lid + stride]); }
        workgroupBarrier();
    }
    if (lid == 0u) { finish(o, sh[0], xb, tb); }
}

@compute @workgroup_size(64)
fn row_main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let o = gid.x + gid.y * groups.x * 64u;
    if (o >= p.n_rows) { return; }
    let xb = layout_index(p.lx, o) + p.off_x;
    let tb = layout_index(p.lt, o) + p.off_t;
    var t = acc_empty();
    if (p.mode != 2u) {
        for (var c = 0u; c < p.C; c = c + 1u) { t = acc_add(t, c, ldx(xb + c * p.cs_x), tb); }
    }
    finish(o, t, xb, tb);
}
