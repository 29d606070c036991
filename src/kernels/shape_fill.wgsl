// Creation ops whose value is a function of the position: arange, linspace, eye, one_hot.
// The prelude (src/ops/shape.c) supplies lib_index.wgsl, `alias CT` (the output's compute type),
// `const IS_FLOAT: bool`, `const PACK: u32` (output elements per word), the storer
// st(w, array<CT, 4>) and, for one_hot's indices in binding `ib`, ld_idx / idx_ok / ld_mask.
// Floats compute in f32 (rounding differs from the reference's double by about one f32 ulp of
// the largest term); integers compute exactly in i32.

struct Params {
    n: u32,
    op: u32,         // 0 arange, 1 linspace, 2 eye, 3 one_hot
    cols: u32,       // eye: columns; one_hot: depth
    inner: u32,      // one_hot: elements after the new axis
    off_i: u32,
    half: u32,       // linspace: elements computed from the start
    pad0: u32,
    pad1: u32,
    start: f32,
    step: f32,
    end: f32,
    on: f32,
    starti: i32,
    stepi: i32,
    oni: i32,
    offi: i32,
    off: f32,
    pad2: u32,
    pad3: u32,
    pad4: u32,
    li: Layout,      // one_hot: the indices' layout
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ib: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

fn value(j: u32) -> CT {
    switch p.op {
        case 0u: {
            if (IS_FLOAT) { return CT(p.start + f32(j) * p.step); }
            return CT(p.starti + i32(j) * p.stepi);
        }
        case 1u: {
            if (j < p.half) { return CT(p.start + f32(j) * p.step); }
            return CT(p.end - f32(p.n - 1u - j) * p.step);
        }
        case 2u: {
            return select(CT(0), CT(1), j / p.cols == j % p.cols);
        }
        default: {
            let a = (j / p.inner) % p.cols;
            let xi = (j / (p.inner * p.cols)) * p.inner + j % p.inner;
            let at = layout_index(p.li, xi) + p.off_i;
            var v = ld_idx(at);
            if (v < 0) { v = v + i32(p.cols); }
            if (!idx_ok(at)) { v = -1; }
            if (v == i32(a)) {
                if (IS_FLOAT) { return CT(p.on); }
                return CT(p.oni);
            }
            if (IS_FLOAT) { return CT(p.off); }
            return CT(p.offi);
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let w = (wid.x + wid.y * groups.x) * WG + lid;
    let first = w * PACK;
    if (first >= p.n) { return; }
    var v: array<CT, 4>;
    for (var k = 0u; k < PACK; k = k + 1u) {
        if (first + k < p.n) { v[k] = value(first + k); }
    }
    st(w, v);
}
