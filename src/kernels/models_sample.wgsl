// Token sampling on the device, one workgroup over the vocabulary: repetition penalty, frequency and
// presence penalties (over the generated ids: the last `step` of the history), temperature,
// then the kept set {logit >= t} where t satisfies top-k, top-p and min-p (found by bisection on
// the logit value, so nothing is sorted), then the Gumbel-max trick: argmax of logit / T + Gumbel
// noise draws exactly from the softmax of the kept logits. Noise comes from a counter-based hash
// of (seed, step, token), so a seed gives the same tokens on every adapter. T == 0 is greedy.
struct Params {
    vocab: u32,
    n_hist: u32,
    top_k: u32,      // 0: off
    step: u32,       // decode step: a fresh noise stream per token
    temperature: f32,
    top_p: f32,      // >= 1: off
    min_p: f32,      // 0: off
    penalty: f32,    // 1: off
    seed_lo: u32,
    seed_hi: u32,
    pad0: u32,
    pad1: u32,
    frequency: f32,  // 0: off
    presence: f32,   // 0: off
    pad2: u32,
    pad3: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> hist: array<i32>;
@group(0) @binding(3) var<storage, read_write> scratch: array<f32>;
@group(0) @binding(4) var<storage, read_write> result: array<i32>;

// The prelude (src/models/sample.c) gives `const WG: u32`: 256, or the device's lower limit (a power
// of two: the reductions halve it).
var<workgroup> red_f: array<f32, WG>;
var<workgroup> red_g: array<f32, WG>;
var<workgroup> red_i: array<i32, WG>;

fn neg_inf() -> f32 { return bitcast<f32>(p.pad0 | 0xff800000u); }

// The logit of token i after the penalty and temperature.
fn score(i: u32) -> f32 {
    return scratch[i];
}

// Sum of exp(x - m) and count over tokens with x >= t.
fn mass(lid: u32, t: f32, m: f32) -> vec2<f32> {
    workgroupBarrier(); // every invocation has read the previous call's totals
    var s = 0.0;
    var c = 0.0;
    for (var i = lid; i < p.vocab; i = i + WG) {
        let x = score(i);
        if (x >= t) { s = s + exp(x - m); c = c + 1.0; }
    }
    red_f[lid] = s;
    red_g[lid] = c;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k = k >> 1u) {
        if (lid < k) { red_f[lid] = red_f[lid] + red_f[lid + k]; red_g[lid] = red_g[lid] + red_g[lid + k]; }
        workgroupBarrier();
    }
    // workgroupUniformLoad: the value is the same in every invocation, which the barriers in the
    // callers' loops need (uniform control flow)
    return vec2<f32>(workgroupUniformLoad(&red_f[0]), workgroupUniformLoad(&red_g[0]));
}

fn hash(x0: u32) -> u32 {
    var x = x0;
    x = x ^ (x >> 16u); x = x * 0x7feb352du;
    x = x ^ (x >> 15u); x = x * 0x846ca68bu;
    x = x ^ (x >> 16u);
    return x;
}

fn uniform01(i: u32) -> f32 {
    let h = hash(i ^ hash(p.seed_lo ^ hash(p.seed_hi ^ hash(p.step * 0x9e3779b9u))));
    return (f32(h >> 8u) + 0.5) / 16777216.0; // in (0, 1)
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    let T = p.temperature;
    // 1. penalised, tempered logits into scratch
    for (var i = lid; i < p.vocab; i = i + WG) {
        scratch[i] = logits[i];
    }
    storageBarrier();
    workgroupBarrier();
    if (lid == 0u && p.penalty != 1.0) {
        for (var h = 0u; h < p.n_hist; h = h + 1u) {
            let id = hist[h];
            if (id >= 0 && u32(id) < p.vocab) {
                let l = logits[u32(id)];
                scratch[u32(id)] = select(l * p.penalty, l / p.penalty, l > 0.0);
            }
        }
    }
    storageBarrier();
    workgroupBarrier();
    if (p.frequency != 0.0 || p.presence != 0.0) {
        // the generated ids are the history's last `step`: the invocation holding an id's first
        // generated occurrence counts its occurrences and penalises it, so each id is penalised
        // once and no two invocations write one id
        let g0 = p.n_hist - min(p.step, p.n_hist);
        for (var h = g0 + lid; h < p.n_hist; h = h + WG) {
            let id = hist[h];
            var first = id >= 0 && u32(id) < p.vocab;
            for (var k = g0; k < h && first; k = k + 1u) { first = hist[k] != id; }
            if (first) {
                var c = 0.0;
                for (var k = h; k < p.n_hist; k = k + 1u) { if (hist[k] == id) { c = c + 1.0; } }
                scratch[u32(id)] = scratch[u32(id)] - c * p.frequency - p.presence;
            }
        }
    }
    storageBarrier();
    workgroupBarrier();
    if (T > 0.0) {
        for (var i = lid; i < p.vocab; i = i + WG) { scratch[i] = scratch[i] / T; }
    }
    storageBarrier();
    workgroupBarrier();
    // 2. the maximum, and the greedy answer (first maximum)
    var best = neg_inf();
    var best_i = 0x7fffffff;
    for (var i = lid; i < p.vocab; i = i + WG) {
        let x = score(i);
        if (x > best) { best = x; best_i = i32(i); }
    }
    red_f[lid] = best;
    red_i[lid] = best_i;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            let a = red_f[lid]; let b = red_f[lid + s];
            if (b > a || (b == a && red_i[lid + s] < red_i[lid])) { red_f[lid] = b; red_i[lid] = red_i[lid + s]; }
        }
        workgroupBarrier();
    }
    let m = workgroupUniformLoad(&red_f[0]);
    let greedy = red_i[0];
    workgroupBarrier();
    if (T <= 0.0) {
        if (lid == 0u) { result[0] = greedy; }
        return;
    }
    // 3. the threshold t, in the order Hugging Face applies the filters: top-k (the largest t that
    //    keeps at least k), then top-p within what top-k kept (the largest t whose mass is at least
    //    top_p of it), then min-p (p >= min_p * p_max, i.e. x >= m + log(min_p)). Bisection on the
    //    logit value: 40 halvings of a 60-wide range are below f32 resolution.
    var t = m - 60.0; // exp(-60): no token below matters
    if (p.top_k > 0u) {
        var a = t;
        var b = m;
        for (var it = 0u; it < 40u; it = it + 1u) {
            let mid = 0.5 * (a + b);
            if (mass(lid, mid, m).y >= f32(p.top_k)) { a = mid; } else { b = mid; }
        }
        t = a;
    }
    if (p.top_p < 1.0) {
        let kept = mass(lid, t, m).x;
        var a = t;
        var b = m;
        for (var it = 0u; it < 40u; it = it + 1u) {
            let mid = 0.5 * (a + b);
            if (mass(lid, mid, m).x >= p.top_p * kept) { a = mid; } else { b = mid; }
        }
        t = a;
    }
    if (p.min_p > 0.0) { t = max(t, m + log(p.min_p)); }
    // 4. Gumbel-max over the kept tokens
    workgroupBarrier();
    var g_best = neg_inf();
    var g_i = greedy;
    for (var i = lid; i < p.vocab; i = i + WG) {
        let x = score(i);
        if (x >= t) {
            let g = x - log(-log(uniform01(i)));
            if (g > g_best) { g_best = g; g_i = i32(i); }
        }
    }
    red_f[lid] = g_best;
    red_i[lid] = g_i;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s && red_f[lid + s] > red_f[lid]) { red_f[lid] = red_f[lid + s]; red_i[lid] = red_i[lid + s]; }
        workgroupBarrier();
    }
    if (lid == 0u) { result[0] = red_i[0]; }
}
