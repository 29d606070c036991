// Q8_0 / Q4_0 weight rows dequantised into f16 rows (src/ops/matmul_tcq.c's comparator,
// WGT_QLINEAR_TC=deq: the f16 copy then goes through matmul_tcd.wgsl): y[n, k] = q * d rounded to
// f16, two a word, for n < p.N, k < p.K (a multiple of 32); invocation i makes half a block (16
// values: 8 words). The prelude holds FMT (wgt_ftype: 8 Q8_0, 2 Q4_0).

struct DqParams {
    N: u32, K: u32, off_w: u32, row_bytes: u32, // off_w: byte of row 0 in w
    gx: u32, pad0: u32, pad1: u32, pad2: u32,   // gx: invocations along x of the grid
};

@group(0) @binding(0) var<uniform> p: DqParams;
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

const Q8_0: u32 = 8u;
const BB: u32 = select(18u, 34u, FMT == Q8_0);

fn joined(lo: u32, hi: u32, sh: u32) -> u32 { return select((lo >> sh) | (hi << (32u - sh)), lo, sh == 0u); }

fn i8x4(v: u32) -> vec4<f32> {
    return vec4<f32>((vec4<i32>(bitcast<i32>(v)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

fn nib4(v: u32, s: u32) -> vec4<f32> {
    return vec4<f32>((vec4<u32>(v) >> vec4<u32>(s, s + 8u, s + 16u, s + 24u)) & vec4<u32>(0xfu)) - 8.0;
}

fn put(i: u32, v: vec4<f32>) {
    y[i] = pack2x16float(v.xy);
    y[i + 1u] = pack2x16float(v.zw);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x + gid.y * p.gx; // half block i: row i / (K / 16), values 16 (i % (K / 16)) ..
    let halves = p.K / 16u;
    if (i >= p.N * halves) { return; }
    let n = i / halves;
    let u = (i % halves) / 2u;
    let h = i % 2u;
    let blk = p.off_w + n * p.row_bytes + u * BB;
    let d = unpack2x16float(w[blk >> 2u] >> ((blk & 2u) * 8u)).x;
    let s = blk + 2u + select(8u, 16u, FMT == Q8_0) * h;
    let j = s >> 2u;
    let sh = (s & 3u) * 8u;
    let w0 = w[j];
    let w1 = w[j + 1u];
    let o = (n * p.K + u * 32u) / 2u; // the block's first word in y
    if (FMT == Q8_0) {
        let w2 = w[j + 2u];
        let w3 = w[j + 3u];
        var w4 = 0u;
        if (sh != 0u) { w4 = w[j + 4u]; }
        put(o + 8u * h, i8x4(joined(w0, w1, sh)) * d);
        put(o + 8u * h + 2u, i8x4(joined(w1, w2, sh)) * d);
        put(o + 8u * h + 4u, i8x4(joined(w2, w3, sh)) * d);
        put(o + 8u * h + 6u, i8x4(joined(w3, w4, sh)) * d);
    } else {
        var w2 = 0u;
        if (sh != 0u) { w2 = w[j + 2u]; }
        let x0 = joined(w0, w1, sh);
        let x1 = joined(w1, w2, sh);
        put(o + 4u * h, nib4(x0, 0u) * d);
        put(o + 4u * h + 2u, nib4(x1, 0u) * d);
        put(o + 8u + 4u * h, nib4(x0, 4u) * d);
        put(o + 8u + 4u * h + 2u, nib4(x1, 4u) * d);
    }
}
