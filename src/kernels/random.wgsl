// Random numbers from Philox4x32-10 (Salmon et al. 2011), counter-based: element i of a call is a
// pure function of (key, counter), so any invocation computes its own numbers and every adapter
// and the CPU reference (src/cpu/random.c, whose header defines the stream) agree on the integers.
// The prelude (src/ops/random.c) supplies lib_index.wgsl, `alias CT` (the output's compute type),
// `const KIND: u32` (the op below), `const PACK: u32` (output elements per word),
// `const HAS_MASK: bool`, `const WG: u32` (invocations per workgroup: 256, or the device's lower
// limit; no number depends on it), the loader ldx(i) -> f32 of binding xs, the storers st (out) and stm
// (aux, dropout's bool mask).
//
// Elementwise kinds (0..6): an invocation computes one Philox block, elements 4t..4t+3 of the
// dispatch, and writes their whole output words (4 is a multiple of every PACK).
// Multinomial (7): a workgroup per row (with replacement and many samples: several, each summing
// the row again); see wgt_cpu_multinomial for the summation order it keeps.
// Shuffle (8): randperm of n <= 2048 in one workgroup.

struct Params {
    n: u32,        // elements in this dispatch (randperm: ditto; multinomial: rows)
    blk_lo: u32,   // the Philox block of element 0 of this dispatch (64-bit)
    blk_hi: u32,
    c2: u32,       // counter words 2 and 3 (0 for the stream; known-answer tests set them)
    c3: u32,
    k0: u32,       // key: the seed
    k1: u32,
    x_off: u32,    // element offset of the input in binding xs
    out_w0: u32,   // word offset of the output in binding out
    aux_w0: u32,   // word offset in aux (mask words, multinomial scratch elements)
    ia: u32,       // randint: lo (bits)
    range: u32,    // randint: hi - lo (0: 2^32)
    a: f32,        // uniform: lo; normal: mean; bernoulli: p; dropout: keep probability
    b: f32,        // uniform: scale; normal: std; dropout: scale
    K: u32,        // multinomial: categories; randperm: n in total
    S: u32,        // multinomial: samples per row; randperm: Feistel half width h
    C: u32,        // multinomial: chunk length ceil(K / CHUNKS)
    e0: u32,       // randperm: the element index this dispatch starts at; multinomial: workgroups per row
    has_x: u32,    // bernoulli: p from xs (else p.a)
    repl: u32,     // multinomial: with replacement (else the scratch copy in aux is drawn from)
};

@group(0) @binding(0) var<uniform> p: Params;
// xs is only read; it is declared read_write so that when it is unused it can share the context's
// scratch buffer with an unused aux (a buffer may not be read-only and writable in one dispatch).
@group(0) @binding(1) var<storage, read_write> xs: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@group(0) @binding(3) var<storage, read_write> aux: array<u32>;

const PI: f32 = 3.14159265358979;

// The high and low words of a * b, from 16-bit halves (WGSL has no 64-bit integers).
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = ((a0 * b0) >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>(a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u), a * b);
}

fn philox(ctr: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = ctr;
    var k = key;
    for (var r = 0u; r < 10u; r = r + 1u) {
        if (r > 0u) { k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u); }
        let m0 = mulhilo(0xD2511F53u, c.x);
        let m1 = mulhilo(0xCD9E8D57u, c.z);
        c = vec4<u32>(m1.x ^ c.y ^ k.x, m1.y, m0.x ^ c.w ^ k.y, m0.y);
    }
    return c;
}

// The block t blocks after the dispatch's first.
fn block_ctr(t: u32) -> vec4<u32> {
    let lo = p.blk_lo + t;
    return vec4<u32>(lo, p.blk_hi + select(0u, 1u, lo < t), p.c2, p.c3);
}

fn u01(w: u32) -> f32 { return f32(w >> 8u) * 5.9604644775390625e-8; }          // [0, 1), exact
fn u01_open0(w: u32) -> f32 { return f32((w >> 8u) + 1u) * 5.9604644775390625e-8; } // (0, 1], exact

// -2 ln u for u in (0, 1]. Near 1, where r = sqrt(-2 ln u) is small and the builtin log's absolute
// error (2^-21 allowed) would dominate it, ln u = 2 atanh(s), s = (u - 1) / (u + 1) with u - 1
// exact: the series to s^15 is within f32 rounding for u >= 0.5 (|s| <= 1/3).
fn neg2log(u: f32) -> f32 {
    if (u < 0.5) { return -2.0 * log(u); }
    let s = (u - 1.0) / (u + 1.0);
    let q = s * s;
    let poly = 1.0 + q * (1.0 / 3.0 + q * (1.0 / 5.0 + q * (1.0 / 7.0 + q * (1.0 / 9.0 + q * (1.0 / 11.0 + q * (1.0 / 13.0 + q / 15.0))))));
    return -4.0 * s * poly;
}

// randperm: a 6-round Feistel network on 2h bits keyed by the seed and the call's block.
fn feistel(v: u32, h: u32) -> u32 {
    let mask = (1u << h) - 1u;
    var l = v >> h;
    var r = v & mask;
    for (var round = 0u; round < 6u; round = round + 1u) {
        let f = philox(vec4<u32>(r, p.blk_lo, p.blk_hi, 0x80000000u | round), vec2<u32>(p.k0, p.k1));
        let nl = r;
        r = l ^ (f.x & mask);
        l = nl;
    }
    return (l << h) | r;
}

fn perm(i: u32) -> u32 {
    var v = i;
    loop {
        v = feistel(v, p.S);
        if (v < p.K) { break; }
    }
    return v;
}

// The four elements of block t.
// An integer result (held as i32 bits) as CT: converted for floats, the bits themselves for i32 and
// u32 (WGSL's u32(i32) reinterprets).
fn from_int(u: u32) -> CT { return CT(bitcast<i32>(u)); }

fn values(t: u32) -> array<CT, 4> {
    var v: array<CT, 4>;
    if (KIND == 6u) {
        for (var k = 0u; k < 4u; k = k + 1u) {
            let i = p.e0 + 4u * t + k;
            if (i < p.K) { v[k] = from_int(perm(i)); }
        }
        return v;
    }
    let w = philox(block_ctr(t), vec2<u32>(p.k0, p.k1));
    switch KIND {
        case 0u: {
            for (var k = 0u; k < 4u; k = k + 1u) { v[k] = from_int(w[k]); }
        }
        case 1u: {
            for (var k = 0u; k < 4u; k = k + 1u) { v[k] = CT(fma(u01(w[k]), p.b, p.a)); }
        }
        case 2u: {
            for (var q = 0u; q < 2u; q = q + 1u) {
                let r = sqrt(neg2log(u01_open0(w[2u * q])));
                let th = 2.0 * PI * u01(w[2u * q + 1u]) - PI;
                v[2u * q] = CT(p.a + p.b * (r * cos(th)));
                v[2u * q + 1u] = CT(p.a + p.b * (r * sin(th)));
            }
        }
        case 3u: {
            for (var k = 0u; k < 4u; k = k + 1u) {
                let e = 4u * t + k;
                var pk = p.a;
                if (p.has_x != 0u && e < p.n) { pk = ldx(p.x_off + e); }
                v[k] = select(CT(0), CT(1), u01(w[k]) < pk);
            }
        }
        case 4u: {
            for (var k = 0u; k < 4u; k = k + 1u) {
                var d = w[k];
                if (p.range != 0u) { d = mulhilo(w[k], p.range).x; }
                v[k] = from_int(p.ia + d);
            }
        }
        default: { // 5: dropout
            var m: array<CT, 4>;
            for (var k = 0u; k < 4u; k = k + 1u) {
                let e = 4u * t + k;
                let kept = u01(w[k]) < p.a;
                var x = 0.0;
                if (e < p.n) { x = ldx(p.x_off + e); }
                v[k] = CT(x * select(0.0, p.b, kept));
                m[k] = select(CT(0), CT(1), kept);
            }
            if (HAS_MASK) { stm(p.aux_w0 + t, m); }
        }
    }
    return v;
}

// ---- multinomial ----

// 256 chunks whatever WG is: the chunks fix the summation order the reference follows.
const CHUNKS: u32 = 256u;
var<workgroup> sum_t: array<f32, CHUNKS>;
var<workgroup> sum_p: array<f32, CHUNKS>;

fn weight(r: u32, j: u32) -> f32 {
    if (KIND == 7u && p.repl == 0u) { return bitcast<f32>(aux[p.aux_w0 + r * p.K + j]); } // without replacement
    let v = ldx(p.x_off + r * p.K + j);
    return select(0.0, v, v > 0.0); // negative and NaN weigh 0
}

fn chunk_sum(r: u32, t: u32) -> f32 {
    let a = t * p.C;
    let b = min(a + p.C, p.K);
    var s = 0.0;
    for (var j = a; j < b; j = j + 1u) { s = s + weight(r, j); }
    return s;
}

fn prefix_from(t0: u32) {
    var acc = 0.0;
    if (t0 > 0u) { acc = sum_p[t0 - 1u]; }
    for (var t = t0; t < CHUNKS; t = t + 1u) {
        acc = acc + sum_t[t];
        sum_p[t] = acc;
    }
}

// Category of row r for u in [0, 1); -1 when the row has no weight.
fn draw(r: u32, u: f32) -> i32 {
    let total = sum_p[CHUNKS - 1u];
    if (!(total > 0.0)) { return -1; }
    let x = u * total;
    var lo = 0u;
    var hi = CHUNKS;
    while (lo < hi) {
        let mid = (lo + hi) / 2u;
        if (sum_p[mid] > x) { hi = mid; } else { lo = mid + 1u; }
    }
    var a = 0u;
    var b = p.K;
    var acc = 0.0;
    if (lo < CHUNKS) {
        a = lo * p.C;
        b = min(a + p.C, p.K);
        if (lo > 0u) { acc = sum_p[lo - 1u]; }
    }
    var last = -1;
    for (var j = a; j < b; j = j + 1u) {
        let wj = weight(r, j);
        if (wj > 0.0) { last = i32(j); }
        if (lo == CHUNKS) { continue; }
        acc = acc + wj;
        if (acc > x) { return i32(j); }
    }
    return last;
}

fn sample_word(g: u32) -> u32 {
    let w = philox(block_ctr(g / 4u), vec2<u32>(p.k0, p.k1));
    return w[g % 4u];
}

fn multinomial(r: u32, part: u32, lid: u32) {
    if (p.repl == 0u) { // without replacement: the row's weights into the scratch copy
        for (var c = lid; c < CHUNKS; c = c + WG) {
            let a = c * p.C;
            let b = min(a + p.C, p.K);
            for (var j = a; j < b; j = j + 1u) {
                let v = ldx(p.x_off + r * p.K + j);
                aux[p.aux_w0 + r * p.K + j] = bitcast<u32>(select(0.0, v, v > 0.0));
            }
        }
        storageBarrier();
    }
    for (var c = lid; c < CHUNKS; c = c + WG) { sum_t[c] = chunk_sum(r, c); }
    workgroupBarrier();
    if (lid == 0u) { prefix_from(0u); }
    workgroupBarrier();
    var ov: array<CT, 4>;
    if (p.repl != 0u) { // part `part` of the row's e0 workgroups draws every e0-th run of 256 samples
        for (var s0 = part * CHUNKS; s0 < p.S; s0 = s0 + CHUNKS * p.e0) {
            for (var s = s0 + lid; s < min(s0 + CHUNKS, p.S); s = s + WG) {
                ov[0] = CT(draw(r, u01(sample_word(r * p.S + s))));
                st(p.out_w0 + r * p.S + s, ov);
            }
        }
        return;
    }
    if (lid != 0u) { return; }
    for (var s = 0u; s < p.S; s = s + 1u) {
        let j = draw(r, u01(sample_word(r * p.S + s)));
        ov[0] = CT(j);
        st(p.out_w0 + r * p.S + s, ov);
        if (j >= 0) {
            aux[p.aux_w0 + r * p.K + u32(j)] = 0u;
            let t = u32(j) / p.C;
            sum_t[t] = chunk_sum(r, t);
            prefix_from(t);
        }
    }
}

// ---- randperm of up to 2048: a Fisher-Yates shuffle in workgroup memory ----

var<workgroup> shuffle_p: array<u32, 2048>;

fn shuffle(lid: u32) {
    for (var i = lid; i < p.n; i = i + WG) { shuffle_p[i] = i; }
    workgroupBarrier();
    if (lid == 0u) {
        var w = vec4<u32>(0u);
        for (var k = 0u; k + 1u < p.n; k = k + 1u) {
            if (k % 4u == 0u) { w = philox(block_ctr(k / 4u), vec2<u32>(p.k0, p.k1)); }
            let i = p.n - 1u - k;
            let j = mulhilo(w[k % 4u], i + 1u).x;
            let t = shuffle_p[i];
            shuffle_p[i] = shuffle_p[j];
            shuffle_p[j] = t;
        }
    }
    workgroupBarrier();
    for (var w = lid; w * PACK < p.n; w = w + WG) {
        var a: array<CT, 4>;
        for (var k = 0u; k < PACK; k = k + 1u) {
            if (w * PACK + k < p.n) { a[k] = from_int(shuffle_p[w * PACK + k]); }
        }
        st(p.out_w0 + w, a);
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * groups.x;
    if (KIND == 7u) {
        if (g < p.n * p.e0) { multinomial(g / p.e0, g % p.e0, lid); }
        return;
    }
    if (KIND == 8u) {
        if (g == 0u) { shuffle(lid); }
        return;
    }
    let t = g * WG + lid;
    if (4u * t >= p.n) { return; }
    let v = values(t);
    for (var q = 0u; q < 4u / PACK; q = q + 1u) {
        let w = t * (4u / PACK) + q;
        if (w * PACK >= p.n) { break; }
        var a: array<CT, 4>;
        for (var k = 0u; k < PACK; k = k + 1u) {
            if (w * PACK + k < p.n) { a[k] = v[q * PACK + k]; }
        }
        st(p.out_w0 + w, a);
    }
}
