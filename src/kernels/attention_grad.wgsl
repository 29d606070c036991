// The row passes of scaled-dot-product attention's backward (src/autograd/grad_attention.c,
// WGT_SDPA_GRAD=fused, the default; src/ops/attention_grad.c runs them; `probs` also serves the
// forward's products path, WGT_SDPA_FWD=products), each one read and one write of the
// [rows, C] scores instead of four to five elementwise, reduce and softmax passes:
//   `probs`:   p[r, c] = softmax over c of (scale s[r, c], -inf where key c is hidden from the row's
//              query: c > off + r % lq with p.causal, or c <= off + r % lq - window with a window);
//   `dscores`: ds[r, c] = scale p[r, c] (dp[r, c] - sum over c' of dp[r, c'] p[r, c']).
// Rows are contiguous f32, C elements each, a workgroup of WG invocations per row. A row holding
// NaN or +inf, or with every key hidden, gives NaN everywhere, as softmax's x - max does.
// The prelude (src/ops/attention_grad.c) supplies `const WG: u32` (a power of two).

struct Params {
    n_rows: u32,
    C: u32,
    lq: u32,      // query rows of a head: the row's query is (row0 + r) % lq
    causal: u32,
    off: i32,     // causal offset
    window: u32,  // 0: none
    scale: f32,
    zero: u32,    // 0, opaque to the compiler (builds NaN)
    row0: u32,    // rows before this dispatch
    off_a: u32,   // element offsets of this dispatch's rows in a, b and out
    off_b: u32,
    off_o: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;       // probs: s; dscores: p
@group(0) @binding(2) var<storage, read> b: array<f32>;       // dscores: dp (probs: a again)
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn nan_f() -> f32 { return bitcast<f32>(p.zero | 0x7fc00000u); }
fn nan_or_pos_inf(v: f32) -> bool { let u = bitcast<u32>(v); return (u & 0x7fffffffu) > 0x7f800000u || u == 0x7f800000u; }

var<workgroup> sh: array<vec2<f32>, WG>;

// The workgroup's sum of v (x) and max (y) into every invocation.
fn wg_reduce(v: vec2<f32>, lid: u32) -> vec2<f32> {
    sh[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) { sh[lid] = vec2<f32>(sh[lid].x + sh[lid + s].x, max(sh[lid].y, sh[lid + s].y)); }
        workgroupBarrier();
    }
    let r = sh[0];
    workgroupBarrier();
    return r;
}

fn row_of(wid: vec3<u32>, groups: vec3<u32>) -> u32 { return wid.x + wid.y * groups.x; }

// Whether key c is visible to row r's query.
fn visible(r: u32, c: u32) -> bool {
    if (p.causal == 0u) { return true; }
    let last = p.off + i32((p.row0 + r) % p.lq);
    if (i32(c) > last) { return false; }
    return p.window == 0u || i32(c) > last - i32(p.window);
}

@compute @workgroup_size(WG)
fn probs(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
         @builtin(local_invocation_index) lid: u32) {
    let r = row_of(wid, groups);
    if (r >= p.n_rows) { return; } // uniform per workgroup
    let ia = p.off_a + r * p.C;
    // the visible scores' max, and a flag (x > 0) for NaN / +inf (compilers may drop NaN from max)
    var m = -bitcast<f32>(p.zero | 0x7f800000u);
    var seen = 0.0;
    var bad = 0.0;
    for (var c = lid; c < p.C; c = c + WG) {
        if (visible(r, c)) {
            let v = p.scale * a[ia + c];
            if (nan_or_pos_inf(v)) { bad = 1.0; }
            m = max(m, v);
            seen = 1.0;
        }
    }
    let fm = wg_reduce(vec2<f32>(bad, m), lid);
    let fa = wg_reduce(vec2<f32>(seen, 0.0), lid);
    let mx = fm.y;
    var s = 0.0;
    for (var c = lid; c < p.C; c = c + WG) {
        if (visible(r, c)) { s = s + exp(p.scale * a[ia + c] - mx); }
    }
    let tot = wg_reduce(vec2<f32>(s, 0.0), lid).x;
    let io = p.off_o + r * p.C;
    let poison = fm.x > 0.0 || fa.x == 0.0;
    for (var c = lid; c < p.C; c = c + WG) {
        var y = 0.0;
        if (poison) { y = nan_f(); } else if (visible(r, c)) { y = exp(p.scale * a[ia + c] - mx) / tot; }
        out[io + c] = y;
    }
}

@compute @workgroup_size(WG)
fn dscores(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let r = row_of(wid, groups);
    if (r >= p.n_rows) { return; }
    let ia = p.off_a + r * p.C;
    let ib = p.off_b + r * p.C;
    var d = 0.0;
    for (var c = lid; c < p.C; c = c + WG) { d = d + b[ib + c] * a[ia + c]; }
    let dot = wg_reduce(vec2<f32>(d, 0.0), lid).x;
    let io = p.off_o + r * p.C;
    for (var c = lid; c < p.C; c = c + WG) { out[io + c] = p.scale * (a[ia + c] * (b[ib + c] - dot)); }
}
