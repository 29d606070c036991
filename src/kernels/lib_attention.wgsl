// The parameters of both attention kernels (attention.wgsl, attention_decode.wgsl): one struct,
// filled by src/ops/attention.c (sdpa_gpu_params there, the same layout) and prepended to both
// kernels by their prelude. attention_decode reuses pad2 for the output's offset, attention's
// WINDOW variant for the sliding window.
struct Params {
    B: u32, Hq: u32, Lq: u32, Lk: u32,
    D: u32, Dv: u32, group: u32, nsplit: u32,
    scale: f32, causal: u32, coff: i32, mask_kind: u32, // mask_kind 0 none, 1 float, 2 bool
    per_split: u32, off_q: u32, off_k: u32, off_v: u32,
    off_m: u32, pad0: u32, kvec: u32, pad2: u32, // kvec: k rows contiguous, D % 4 == 0, rows start even
    sq: vec4<u32>, // strides of q [B, Hq, Lq, D], k and v [B, Hkv, Lk, D], mask [B, Hq, Lq, Lk]
    sk: vec4<u32>,
    sv: vec4<u32>,
    sm: vec4<u32>,
};
