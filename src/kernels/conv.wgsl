// Convolutions over up to 3 spatial dims (1-D and 2-D run as 3-D with leading dims of size 1),
// f32 accumulation. Three entry points:
//  - `direct`: any convolution or transposed convolution. An invocation computes the 4 outputs
//    j0 .. j0 + 3 of the flat output (so 16-bit outputs are written in whole words); when the four
//    lie on one output row of a convolution they share each weight load and the row's geometry.
//    Else each output on its own.
//  - `gemm`: an implicit GEMM (transposed convolutions too): out[g] [M = N * P pixels, Cout/G]
//    = A [M, Kd = Cin/G * K0 K1 K2] (x gathered on the fly, no im2col buffer) @ W^T, in tiles of
//    WG/16 * TM pixels x 64 channels with a k step of 16; WG invocations of TM x 4 outputs.
//  - `depthwise`: 2-D convolutions with one input channel per group, 32 x 32 output tiles whose
//    input region sits in workgroup memory; WG invocations of 4 outputs of a row, 256 / WG rows each.
// x is read through its strides; the weight is contiguous ([Cout, Cin/G, K..], transposed
// [Cin, Cout/G, K..]; for `gemm` permuted to [G, K.., Cin/G, Cout/G], so a tile's weights are
// read along the output channels); padding reads zeros, multiplied like any input (as a
// zero-padded product).
//
// The prelude (src/ops/conv.c) supplies the loaders ldx, ldw, ldb (-> f32), the storer st, and
// `const PACK: u32` (outputs per 32-bit word), `const TM: u32` (gemm: pixels per invocation),
// `const DW_TILE: u32` (depthwise: the input region's capacity) and `const WG: u32` (invocations
// of the tiled kernels: 256, or 128 where the device allows no more, as compatibility mode's
// default limits; at 256 the tiles are those measured on the H200).

struct Params {
    isz: vec4<u32>,  // input spatial sizes S0, S1, S2; Cin
    osz: vec4<u32>,  // output spatial sizes O0, O1, O2; Cout
    ksz: vec4<u32>,  // kernel sizes K0, K1, K2; Cin / groups
    str: vec4<u32>,  // strides; Cout / groups
    dil: vec4<u32>,  // dilations; 1 for a transposed convolution, else 0
    pad: vec4<i32>,  // pad_begin per dim; 1 with a bias
    xs: vec4<u32>,   // x's strides of S0, S1, S2 and of the channel
    xn: u32,         // x's stride of the batch
    x_off: u32,      // element offsets within the bindings
    w_off: u32,
    b_off: u32,
    total: u32,      // outputs of this dispatch (direct); M (gemm)
    out_w0: u32,     // word offset of this dispatch's output within its binding
    n_img: u32,      // images in this dispatch
    zero: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<u32>;
@group(0) @binding(2) var<storage, read> ws: array<u32>;
@group(0) @binding(3) var<storage, read> bs: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

fn x_at(n: u32, c: u32, i0: u32, i1: u32, i2: u32) -> u32 {
    return p.x_off + n * p.xn + c * p.xs.w + i0 * p.xs.x + i1 * p.xs.y + i2 * p.xs.z;
}

fn bias_of(co: u32) -> f32 {
    if (p.pad.w != 0) { return ldb(p.b_off + co); }
    return 0.0;
}

// Output element coordinates: (n, co, o0, o1, o2) of flat index j.
fn decompose(j: u32) -> array<u32, 5> {
    var r = j;
    let o2 = r % p.osz.z; r = r / p.osz.z;
    let o1 = r % p.osz.y; r = r / p.osz.y;
    let o0 = r % p.osz.x; r = r / p.osz.x;
    let co = r % p.osz.w;
    return array<u32, 5>(r / p.osz.w, co, o0, o1, o2);
}

// Input index of output position o through tap k along a dim of a convolution; -1 in the padding.
fn conv_in(o: u32, k: u32, s: u32, d: u32, pb: i32, size: u32) -> i32 {
    let i = i32(o * s + k * d) - pb;
    return select(-1, i, i >= 0 && i < i32(size));
}

// Input index of output position o through tap k of a transposed convolution, or -1.
fn tconv_in(o: u32, k: u32, s: u32, d: u32, pb: i32, size: u32) -> i32 {
    let t = i32(o) + pb - i32(k * d);
    if (t < 0 || (u32(t) % s) != 0u) { return -1; }
    let i = u32(t) / s;
    return select(-1, i32(i), i < size);
}

fn one_conv(n: u32, co: u32, o0: u32, o1: u32, o2: u32) -> f32 {
    var acc = 0.0;
    let cin_g = p.ksz.w;
    let c0 = (co / p.str.w) * cin_g;
    var wi = p.w_off + co * cin_g * p.ksz.x * p.ksz.y * p.ksz.z;
    for (var ci = 0u; ci < cin_g; ci++) {
        for (var k0 = 0u; k0 < p.ksz.x; k0++) {
            let i0 = conv_in(o0, k0, p.str.x, p.dil.x, p.pad.x, p.isz.x);
            for (var k1 = 0u; k1 < p.ksz.y; k1++) {
                let i1 = conv_in(o1, k1, p.str.y, p.dil.y, p.pad.y, p.isz.y);
                for (var k2 = 0u; k2 < p.ksz.z; k2++) {
                    let i2 = conv_in(o2, k2, p.str.z, p.dil.z, p.pad.z, p.isz.z);
                    var xv = 0.0;
                    if (i0 >= 0 && i1 >= 0 && i2 >= 0) { xv = ldx(x_at(n, c0 + ci, u32(i0), u32(i1), u32(i2))); }
                    acc = fma(xv, ldw(wi), acc);
                    wi++;
                }
            }
        }
    }
    return acc + bias_of(co);
}

fn one_tconv(n: u32, co: u32, o0: u32, o1: u32, o2: u32) -> f32 {
    var acc = 0.0;
    let cin_g = p.ksz.w;
    let cout_g = p.str.w;
    let c0 = (co / cout_g) * cin_g;
    let col = co % cout_g;
    let kk = p.ksz.x * p.ksz.y * p.ksz.z;
    for (var k0 = 0u; k0 < p.ksz.x; k0++) {
        let i0 = tconv_in(o0, k0, p.str.x, p.dil.x, p.pad.x, p.isz.x);
        if (i0 < 0) { continue; }
        for (var k1 = 0u; k1 < p.ksz.y; k1++) {
            let i1 = tconv_in(o1, k1, p.str.y, p.dil.y, p.pad.y, p.isz.y);
            if (i1 < 0) { continue; }
            for (var k2 = 0u; k2 < p.ksz.z; k2++) {
                let i2 = tconv_in(o2, k2, p.str.z, p.dil.z, p.pad.z, p.isz.z);
                if (i2 < 0) { continue; }
                let tapk = (k0 * p.ksz.y + k1) * p.ksz.z + k2;
                for (var ci = 0u; ci < cin_g; ci++) {
                    let c = c0 + ci;
                    acc = fma(ldx(x_at(n, c, u32(i0), u32(i1), u32(i2))), ldw(p.w_off + (c * cout_g + col) * kk + tapk), acc);
                }
            }
        }
    }
    return acc + bias_of(co);
}

// Four neighbouring outputs o2 .. o2 + 3 of one row of a convolution.
fn row_conv(n: u32, co: u32, o0: u32, o1: u32, o2: u32) -> vec4<f32> {
    var acc = vec4<f32>(0.0);
    let cin_g = p.ksz.w;
    let c0 = (co / p.str.w) * cin_g;
    var wi = p.w_off + co * cin_g * p.ksz.x * p.ksz.y * p.ksz.z;
    let base2 = i32(o2 * p.str.z) - p.pad.z;
    let step = i32(p.str.z);
    for (var ci = 0u; ci < cin_g; ci++) {
        for (var k0 = 0u; k0 < p.ksz.x; k0++) {
            let i0 = conv_in(o0, k0, p.str.x, p.dil.x, p.pad.x, p.isz.x);
            for (var k1 = 0u; k1 < p.ksz.y; k1++) {
                let i1 = conv_in(o1, k1, p.str.y, p.dil.y, p.pad.y, p.isz.y);
                let live = i0 >= 0 && i1 >= 0;
                let rowi = x_at(n, c0 + ci, u32(max(i0, 0)), u32(max(i1, 0)), 0u);
                for (var k2 = 0u; k2 < p.ksz.z; k2++) {
                    let wv = ldw(wi);
                    wi++;
                    let i2 = base2 + i32(k2 * p.dil.z);
                    var xv = vec4<f32>(0.0);
                    if (live) {
                        for (var q = 0; q < 4; q++) {
                            let iq = i2 + q * step;
                            if (iq >= 0 && iq < i32(p.isz.z)) { xv[q] = ldx(rowi + u32(iq) * p.xs.z); }
                        }
                    }
                    acc = fma(xv, vec4<f32>(wv), acc);
                }
            }
        }
    }
    return acc + vec4<f32>(bias_of(co));
}

@compute @workgroup_size(128)
fn direct(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let t = (wid.x + wid.y * nwg.x) * 128u + lid;
    let j0 = t * 4u;
    if (j0 >= p.total) { return; }
    var v: array<f32, 4>;
    let c = decompose(j0);
    if (p.dil.w == 0u && c[4] + 3u < p.osz.z) {
        let r = row_conv(c[0], c[1], c[2], c[3], c[4]);
        v = array<f32, 4>(r.x, r.y, r.z, r.w);
    } else {
        for (var q = 0u; q < 4u; q++) {
            if (j0 + q >= p.total) { v[q] = 0.0; continue; }
            let e = decompose(j0 + q);
            if (p.dil.w == 0u) { v[q] = one_conv(e[0], e[1], e[2], e[3], e[4]); }
            else { v[q] = one_tconv(e[0], e[1], e[2], e[3], e[4]); }
        }
    }
    for (var h = 0u; h < 4u / PACK; h++) {
        if (j0 + h * PACK >= p.total) { break; }
        var u: array<f32, 4>;
        for (var q = 0u; q < PACK; q++) { u[q] = v[h * PACK + q]; }
        st(p.out_w0 + j0 / PACK + h, u);
    }
}

// ---- implicit GEMM ----
// The reduction runs tap-major: for each kernel tap (uniform over the workgroup: its bounds check
// and input offset are computed once per tap), the input channels in steps of BK. So the gather
// from x costs no division per element. An invocation owns TM pixels x 4 channels.

const BN: u32 = 64u;            // output channels per tile: 16 columns of invocations x 4
const BM: u32 = (WG / 16u) * TM; // pixels per tile: WG / 16 rows of invocations x TM (4 or 8)
const BK: u32 = 16u;            // input channels per step
const A_STEP: u32 = WG / BM;    // rows of the A tile loaded at once (each invocation: BK / A_STEP)
const B_STEP: u32 = WG / BN;    // rows of the B tile loaded at once (each invocation: BK / B_STEP)

var<workgroup> As: array<vec4<f32>, BM * BK / 4u>; // As[k][m]
var<workgroup> Bs: array<vec4<f32>, BN * BK / 4u>; // Bs[k][n]

@compute @workgroup_size(WG)
fn gemm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wid.z;
    let cin_g = p.ksz.w;
    let cout_g = p.str.w;
    let KK = p.ksz.x * p.ksz.y * p.ksz.z;
    let K1K2 = p.ksz.y * p.ksz.z;
    let Kd = cin_g * KK;
    let P = p.osz.x * p.osz.y * p.osz.z;
    let M = p.total;
    let m0 = wid.y * BM;
    let n0 = wid.x * BN;

    // The pixel this invocation gathers A for (fixed over the loop): its image and input origin.
    let am = lid % BM;
    let ak0 = lid / BM;
    let gm = m0 + am;
    let m_ok = gm < M;
    var pix = gm % P;
    let img = gm / P;
    let a2 = pix % p.osz.z; pix = pix / p.osz.z;
    let a1 = pix % p.osz.y;
    let a0 = pix / p.osz.y;
    // a convolution reads i = o s - pad + t d; a transposed one i = (o + pad - t d) / s where that
    // divides (taps landing elsewhere read zeros, like padding; so an infinite weight there gives
    // NaN, where the reference, which skips such taps, does not)
    let tr = p.dil.w != 0u;
    let sv = vec3<i32>(p.str.xyz);
    let oa = vec3<i32>(i32(a0), i32(a1), i32(a2));
    let org = select(oa * sv - p.pad.xyz, oa + p.pad.xyz, tr);
    let xbase = p.x_off + img * p.xn + g * cin_g * p.xs.w;
    let tx = lid % 16u;
    let ty = lid / 16u;

    var acc: array<vec4<f32>, TM>;
    for (var i = 0u; i < TM; i++) { acc[i] = vec4<f32>(0.0); }

    // Steps (tap, c0): the next step's operands are read from memory into registers while the
    // current one is multiplied out of workgroup memory.
    let csteps = (cin_g + BK - 1u) / BK;
    let steps = KK * csteps;
    var ra: array<f32, BK / A_STEP>;
    var rb: array<f32, BK / B_STEP>;
    for (var s = 0u; s <= steps; s++) {
        if (s > 0u) {
            for (var r = 0u; r < BK / A_STEP; r++) {
                let ta = (ak0 + r * A_STEP) * BM + am;
                As[ta / 4u][ta % 4u] = ra[r];
            }
            for (var r = 0u; r < BK / B_STEP; r++) {
                let tb = (lid / BN + r * B_STEP) * BN + lid % BN;
                Bs[tb / 4u][tb % 4u] = rb[r];
            }
        }
        workgroupBarrier();
        if (s < steps) {
            let tap = s / csteps;
            let c0 = (s % csteps) * BK;
            let t0 = tap / K1K2;
            let t1 = (tap / p.ksz.z) % p.ksz.y;
            let t2 = tap % p.ksz.z;
            let td = vec3<i32>(i32(t0 * p.dil.x), i32(t1 * p.dil.y), i32(t2 * p.dil.z));
            var i = org + td;
            var valid = m_ok;
            if (tr) {
                let num = org - td;
                valid = valid && all(num >= vec3<i32>(0)) && all(num % sv == vec3<i32>(0));
                i = num / sv;
            }
            valid = valid && all(i >= vec3<i32>(0)) && all(vec3<u32>(i) < p.isz.xyz);
            let xa = xbase + u32(max(i.x, 0)) * p.xs.x + u32(max(i.y, 0)) * p.xs.y + u32(max(i.z, 0)) * p.xs.z;
            for (var r = 0u; r < BK / A_STEP; r++) {
                let ci = c0 + ak0 + r * A_STEP;
                var v = 0.0;
                if (valid && ci < cin_g) { v = ldx(xa + ci * p.xs.w); }
                ra[r] = v;
            }
            for (var r = 0u; r < BK / B_STEP; r++) {
                let co = n0 + lid % BN;
                let ci = c0 + lid / BN + r * B_STEP;
                var w = 0.0;
                if (co < cout_g && ci < cin_g) { w = ldw(p.w_off + ((g * KK + tap) * cin_g + ci) * cout_g + co); }
                rb[r] = w;
            }
        }
        if (s > 0u) {
            for (var k = 0u; k < BK; k++) {
                let b = Bs[(k * BN) / 4u + tx];
                for (var q = 0u; q < TM / 4u; q++) {
                    let a = As[(k * BM + ty * TM) / 4u + q];
                    acc[q * 4u] = fma(vec4<f32>(a.x), b, acc[q * 4u]);
                    acc[q * 4u + 1u] = fma(vec4<f32>(a.y), b, acc[q * 4u + 1u]);
                    acc[q * 4u + 2u] = fma(vec4<f32>(a.z), b, acc[q * 4u + 2u]);
                    acc[q * 4u + 3u] = fma(vec4<f32>(a.w), b, acc[q * 4u + 3u]);
                }
            }
        }
        workgroupBarrier();
    }

    // acc[i][j]: pixel m0 + ty * TM + i, channel n0 + tx * 4 + j. P % PACK == 0 (the op checks), so
    // the pixels of one output word belong to one image.
    let mb = m0 + ty * TM;
    for (var j = 0u; j < 4u; j++) {
        let co = n0 + tx * 4u + j;
        if (co >= cout_g) { break; }
        let cg = g * cout_g + co;
        let bv = bias_of(cg);
        for (var i = 0u; i < TM; i = i + PACK) {
            let m = mb + i;
            if (m >= M) { break; }
            let e = ((m / P) * p.osz.w + cg) * P + m % P;
            var u: array<f32, 4>;
            for (var q = 0u; q < PACK; q++) { u[q] = acc[i + q][j] + bv; }
            st(p.out_w0 + e / PACK, u);
        }
    }
}

// ---- depthwise 2-D (groups == Cin, one input channel per output channel) ----
// A workgroup computes a 32 x 32 tile of one output plane (n, co): it reads the input region
// the tile needs (zeros in the padding) and the plane's K0 x K1 weights into workgroup memory once,
// then each invocation computes 4 neighbouring outputs of a row from there. Spatial dims are the
// last two (osz.y, osz.z); the op checks osz.x == 1, the region fits DW_TILE and OW % PACK == 0.

const DW_TAPS: u32 = 256u;   // DW_TILE (input region elements, <= 6144) comes from the prelude

var<workgroup> Xt: array<f32, DW_TILE>;
var<workgroup> Wt: array<f32, DW_TAPS>;

@compute @workgroup_size(WG)
fn depthwise(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let tiles_w = (p.osz.z + 31u) / 32u;
    let oh0 = (wid.x / tiles_w) * 32u;
    let ow0 = (wid.x % tiles_w) * 32u;
    let plane = wid.y + wid.z * 65535u; // (n, co) within this dispatch
    if (plane >= p.n_img * p.osz.w) { return; }
    let n = plane / p.osz.w;
    let co = plane % p.osz.w;
    let c = co / p.str.w;
    // the input region: rows from oh0 * s - pad, columns from ow0 * s - pad
    let ih = 31u * p.str.y + (p.ksz.y - 1u) * p.dil.y + 1u;
    let iw = 31u * p.str.z + (p.ksz.z - 1u) * p.dil.z + 1u;
    let r0 = i32(oh0 * p.str.y) - p.pad.y;
    let q0 = i32(ow0 * p.str.z) - p.pad.z;
    let xb = p.x_off + n * p.xn + c * p.xs.w;
    for (var e = lid; e < ih * iw; e = e + WG) {
        let r = r0 + i32(e / iw);
        let q = q0 + i32(e % iw);
        var v = 0.0;
        if (r >= 0 && r < i32(p.isz.y) && q >= 0 && q < i32(p.isz.z)) { v = ldx(xb + u32(r) * p.xs.y + u32(q) * p.xs.z); }
        Xt[e] = v;
    }
    let taps = p.ksz.y * p.ksz.z;
    for (var e = lid; e < taps; e = e + WG) { Wt[e] = ldw(p.w_off + co * taps + e); }
    workgroupBarrier();

    let tx = lid % 8u;
    let ow = ow0 + tx * 4u;
    if (ow >= p.osz.z) { return; }
    for (var ty = lid / 8u; ty < 32u; ty = ty + WG / 8u) { // one pass at 256 invocations, two at 128
        let oh = oh0 + ty;
        if (oh >= p.osz.y) { break; }
        var acc = vec4<f32>(0.0);
        for (var k0 = 0u; k0 < p.ksz.y; k0++) {
            let row = (ty * p.str.y + k0 * p.dil.y) * iw + tx * 4u * p.str.z;
            for (var k1 = 0u; k1 < p.ksz.z; k1++) {
                let wv = Wt[k0 * p.ksz.z + k1];
                let b = row + k1 * p.dil.z;
                let xv = vec4<f32>(Xt[b], Xt[b + p.str.z], Xt[b + 2u * p.str.z], Xt[b + 3u * p.str.z]);
                acc = fma(xv, vec4<f32>(wv), acc);
            }
        }
        acc = acc + vec4<f32>(bias_of(co));
        let e0 = (plane * p.osz.y + oh) * p.osz.z + ow;
        for (var h = 0u; h < 4u / PACK; h++) {
            if (ow + h * PACK >= p.osz.z) { break; }
            var u: array<f32, 4>;
            for (var q = 0u; q < PACK; q++) { u[q] = acc[h * PACK + q]; }
            st(p.out_w0 + e0 / PACK + h, u);
        }
    }
}
