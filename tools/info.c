/* wgt info: the adapter, its features and limits, and a self-check; or, given a path, a model file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "wgt.h"

/* Every variable the library and CLI read, with the default the code uses when it is unset. */
static void print_env_help(FILE *f)
{
    fprintf(f,
            "environment (unset: the default in brackets):\n"
            "  WGT_WEBGPU_LIB=path           the webgpu.h implementation to load [.deps/dawn-2026/dawn.node of\n"
            "                                the build tree, else the installed lib/wgt/dawn.node; Dawn of npm\n"
            "                                webgpu@0.6.2; the 2025 Dawn: .deps/dawn/libwebgpu_wrapper.so]\n"
            "  WGT_NAPI_STUB=path            libwgt_napi_stub.so for a Node-addon library [the build tree's,\n"
            "                                next to the program or the library, then the installed one]\n"
            "  WGT_BACKEND=vulkan|metal|d3d12|opengl|opengles|cpu   [the implementation's choice: Vulkan on\n"
            "                                Linux]; cpu: wgt's plain C reference, no WebGPU\n"
            "  WGT_ADAPTER=index|name        choose an adapter (see --adapters) [the implementation's default]\n"
            "  WGT_COMPAT=0|1                compatibility mode [0; implied by the OpenGL backends]\n"
            "  WGT_LIMITS=adapter|default    device limits: the adapter's or the WebGPU spec's minimums [adapter]\n"
            "  WGT_FORCE_FALLBACK_ADAPTER=0|1  the implementation's software adapter [0]\n"
            "  WGT_DEBUG=0|1                 log adapter and device details to stderr [0]\n"
            "  WGT_DUMP_SHADERS=dir          write every WGSL module compiled to dir [unset: none]\n"
            "  WGT_KERNEL_DIR=dir            load kernels from dir instead of the embedded copies [embedded]\n"
            "  WGT_MAX_BATCH=n               dispatches per submit, 1 to 65536 [1024]\n"
            "  WGT_BIND_CACHE=n              bind groups kept cached, 16 to 16777216; past it the least recently\n"
            "                                used quarter is released [8192]\n"
            "  WGT_DAWN_TOGGLES=a,b,...      Dawn device toggles, passed through (e.g. disable_robustness) [none]\n"
            "  WGT_ROBUST=0|1                1: keep Dawn's bounds clamping on hardware adapters too (off there\n"
            "                                by default: wgt's kernels bound their accesses) [0]\n"
            "  WGT_PROFILE=0|1|2|pass        time every kernel with timestamp queries, print a table [0];\n"
            "                                2: a row per kernel and bound bytes (call sites apart); pass:\n"
            "                                time whole compute passes (a decode token's GPU time, uninflated)\n"
            "  WGT_STRICT=0|1                an op without a GPU kernel for a dtype is an error instead of a\n"
            "                                warning and the CPU reference [0]\n"
            "  WGT_GRAPH_FUSE=0|1            graph capture fuses chains of elementwise ops into one generated\n"
            "                                kernel each [1]; 0: every op keeps its dispatch (comparisons)\n"
            "  WGT_GRAPH_FUSE_HOST=0|1       graph fusion also puts elementwise chains before and after a\n"
            "                                reduction, softmax, norm or matrix product into its kernel [1]\n"
            "  WGT_GRAPH_FUSE_MATMUL=0|1     graph fusion puts the elementwise chain after a matrix product\n"
            "                                into its store: 1 every product's, 0 none [unset: decode's\n"
            "                                products (the gemv kernel) only]\n"
            "  WGT_GRAPH_FUSE_MATMUL_PRO=0|1 graph fusion computes a decode product's f32 input in its\n"
            "                                loads (the elementwise chain that made it: silu(gate) * up\n"
            "                                before the down projection; slower on the H200) [0]\n"
            "  WGT_GRAPH_FUSE_NORM_MATMUL=0|1  graph fusion puts an rms_norm of one row into the decode\n"
            "                                product after it (the row's statistic in each workgroup; equal\n"
            "                                to the unfused graph within rounding, not bit for bit) [0]\n"
            "  WGT_GRAPH_ROUTE=0|1           graph fusion routes a captured one-token step's plain ops to the\n"
            "                                decoder's fused kernels (rms_norm + product (+ rotation and cache\n"
            "                                writes), silu * up + product (+ residual), product + residual):\n"
            "                                equal to the hand-fused ops bit for bit [1]\n"
            "  WGT_GRAPH_MERGE=0|1           graph capture merges matrix products that share an input (q/k/v,\n"
            "                                gate/up) into one dispatch [1]; 0: each keeps its own\n"
            "  WGT_DECODE_GENERIC=0|1        a one-token decode step written with plain ops (linear, add,\n"
            "                                rms_norm, silu, mul) instead of the hand-fused products, for\n"
            "                                comparing graph capture's generic fusion with them [0]\n"
            "  WGT_GRAPH_PLAN=0|1            graph capture shares buffers between intermediates whose live\n"
            "                                ranges do not overlap [1]; 0: each keeps its own (comparisons)\n"
            "  WGT_CONV_PATH=direct          convolutions without the tiled kernels (comparisons) [tiled]\n"
            "  WGT_MATMUL_TC=0|half|1|emulate[:MxNxK]  matrix products through subgroup-matrix tiles\n"
            "                                (tensor cores: f16 operands, f32 sums) where the device has\n"
            "                                them: half, products with f16/bf16 weights; 1,\n"
            "                                every float product, of fragment shape MxNxK if given;\n"
            "                                emulate: the same tiles in scalar code (tests) [0]\n"
            "  WGT_MATMUL_TCD=0|f16|half|all|emulate  matrix products on the tensor cores with fragments\n"
            "                                loaded from f16 rows (operands copied so where not): f16,\n"
            "                                products with an f16 operand (no bf16); half, f16/bf16\n"
            "                                operands; all, every float product;\n"
            "                                emulate: scalar fragments (tests) [f16]\n"
            "  WGT_MATMUL_TCD_TILE=FMxFN:RxC[:MODE[:BK]]  16x16 fragments a subgroup, subgroups a workgroup,\n"
            "                                fragments from storage (MODE 0) or k slabs of BK staged through\n"
            "                                workgroup memory (1-4: 16- / 4-byte loads, single / double\n"
            "                                buffered) (tuning) [4x2:2x4:3:32]\n"
            "  WGT_MATMUL_TCD_SPLIT=N        those products split along k into N slices (0: none) [fewer\n"
            "                                than 66 tiles over k >= 1024: slices for up to 132 workgroups]\n"
            "  WGT_MATMUL_TCD_SMALL=0|1|TILE  products of fewer than 132 tiles over k < 1024: in TILE\n"
            "                                (WGT_MATMUL_TCD_TILE's form; 1: 2x2:2x2:3:32); 0: the default\n"
            "                                tile [1]\n"
            "  WGT_MATMUL_TCD_EPI=0|1        1: whole tiles with a bias or alpha store their fragments, then\n"
            "                                add it; 0: through workgroup memory fragment by fragment [0]\n"
            "  WGT_MATMUL_TCD_DIRECT=0|1     1: staged tiles read f32 activations (4-byte words) and\n"
            "                                ragged rows themselves; 0: matmul_half.wgsl copies them [0]\n"
            "  WGT_MATMUL_TC_VEC=0|1         0: WGT_MATMUL_TC's tiles load one element at a time (tuning) [1]\n"
            "  WGT_MATMUL_TC_QUANT=0|1       quantized weights' prefill through those tiles too (the\n"
            "                                blocks dequantised into them; slower on the H200) [0]\n"
            "  WGT_QLINEAR_TC=0|1|deq|emulate  Q8_0/Q4_0 prefill on the tensor cores: 1, the blocks\n"
            "                                dequantised into f16 k slabs of staged tiles (matmul_tcq);\n"
            "                                deq, an f16 copy of each weight then WGT_MATMUL_TCD's\n"
            "                                product (comparisons); emulate: scalar fragments (tests);\n"
            "                                0: qlinear's f32 tiles [1]\n"
            "  WGT_QLINEAR_TC_TILE=FMxFN:RxC|auto  its 16x16 fragments a subgroup, subgroups a workgroup;\n"
            "                                auto: smaller tiles for products of few tiles (tuning)\n"
            "                                [4x2:2x4, else the largest that fits]\n"
            "  WGT_QLINEAR_TC_SPLIT=N        its products split along k into N slices (0: none) [few tiles\n"
            "                                over k >= 1024: enough slices for ~264 workgroups]\n"
            "  WGT_MATMUL_TC_TILE=BMxBNxBK:RxC  force those tiles' shape: BM x BN outputs, k steps of BK,\n"
            "                                R x C subgroups (tuning) [chosen per product]\n"
            "  WGT_ATTENTION_TC=0|1|emulate[:MxNxK]  prefill attention (several query rows, no mask or\n"
            "                                window) through subgroup-matrix tiles where the device has them\n"
            "                                (q, k, v and probabilities in f16, f32 softmax and sums), of\n"
            "                                fragment shape MxNxK if given and offered; emulate: the same\n"
            "                                tiles in scalar code (tests) [f16, bf16 and quantized models'\n"
            "                                prefill; 0 for f32 models]\n"
            "  WGT_ATTENTION_TC_ROWS=0|1     1: those tiles store f32 outputs without gradients token-major,\n"
            "                                so a model's heads back to rows is a view, not a copy [1]\n"
            "  WGT_ATTENTION_TC_KV4=0|1      1: those tiles load f32 k and v rows of whole 16-byte words (a\n"
            "                                model's cache) a block ahead as 16-byte words [1]\n"
            "  WGT_ATTENTION_TC_GQA=0|1      1: a workgroup of those tiles takes the query heads of one kv\n"
            "                                head (fewer positions each) [1]\n"
            "  WGT_ATTENTION_LOADS=1|4       the attention kernels' key loops issue k and v loads one (1)\n"
            "                                or several (4) at a time [4 for decode, 1 for prefill]\n"
            "  WGT_ATTENTION_TC_TILE=BQxBKV  force those tiles: BQ query rows a workgroup, keys in blocks of\n"
            "                                BKV (tuning; ignored where it does not fit) [the largest that fits]\n"
            "  WGT_SGMATRIX_DUMP=1           print the subgroup-matrix configurations as Dawn wrote them [0]\n"
            "  WGT_MATMUL_SPLIT_K=0|1        split a small product over a long k into slices [1]\n"
            "  WGT_MATMUL_TILE=0|auto|BMxBNxBK:TMxTN  f32 tiled products through register tiles (TM x TN\n"
            "                                outputs an invocation, 16-byte loads, two stages): auto, the\n"
            "                                tile by shape; or that tile (tuning); 0: matmul.wgsl [auto]\n"
            "  WGT_MATMUL_TILE_PAD=0|1       1: those tiles' k rows padded in workgroup memory by 16 bytes\n"
            "                                (one-element stores on distinct banks) [0]\n"
            "  WGT_MATMUL_TILE_TN=0|1        1: 64 x 64 register tiles first for weight gradients (A read\n"
            "                                along m) [0]\n"
            "  WGT_MATMUL_TILE_UNROLL=0|1    1: those tiles' sums as named registers, the products spelled\n"
            "                                out (no array for the driver to unroll), and 128 x 96 / 128 x\n"
            "                                128 (8 x 8 an invocation) tiles for large products [1]\n"
            "  WGT_SDPA_FWD=training|products|kernel  f32 attention over several query rows, no mask or\n"
            "                                window, as q k^T, a softmax row kernel and P v through the\n"
            "                                register tiles: training: where autograd records it; products:\n"
            "                                prompts too; kernel: never (attention.wgsl) [training]\n"
            "  WGT_SDPA_GRAD=composed|fused  attention's backward without a mask: fused: its softmax and\n"
            "                                scale passes in two row kernels [fused]\n"
            "  WGT_NORM_GRAD=composed|fused  layer / RMS norm's backward: fused: one row kernel [fused]\n"
            "  WGT_ACT_GRAD=composed|fused   gelu_tanh's and silu's backward: fused: one kernel [fused]\n"
            "  WGT_MATMUL_ROWS=0|1|16        linear layers over 2..64 rows (several sequences' decode) read\n"
            "                                each weight once per 8 rows (16: per 16) [1]; 0: the GEMV and\n"
            "                                tiled kernels (comparisons)\n"
            "  WGT_QLINEAR_QKV=0|1[:N]       quantized decode: the norm, q/k/v product, rotation and cache\n"
            "                                writes in one kernel (N row pairs a workgroup: tuning) [1];\n"
            "                                0: two dispatches (comparisons)\n"
            "  WGT_QLINEAR_BLOCKS=0..3[:T]   Q8_0/Q4_0 decode products read a whole block a lane, their input\n"
            "                                staged in workgroup memory [3]; 1: SwiGLU's only, 2: none (both\n"
            "                                slower); T lanes a row (tuning); 0: 8-element pieces, 32 lanes a row\n"
            "  WGT_QLINEAR_ROWS=auto|0|R[:T[:W]]  Q8_0/Q4_0 decode products: R rows (1-4) a group of T lanes\n"
            "                                read each staged input block once; at most W workgroups, each\n"
            "                                staging x once for several steps [auto: R 2, W 1056]; 0: off;\n"
            "                                auto:L: L lanes where rows have L blocks; SPEC,swiglu=SPEC: a\n"
            "                                SwiGLU prologue's products' own setting, SPEC,down=SPEC: wider\n"
            "                                than tall products' (tuning)\n"
            "  WGT_QLINEAR_GLU=0|1           quantized decode: the gate/up product writes silu(gate) * up, so\n"
            "                                the down projection stages its input without SwiGLU [1]\n"
            "  WGT_LM_HEAD=auto|0|R[:T[:G[:U]]]  decode's output layer: R rows a group of T lanes, at most G\n"
            "                                workgroups looping over the rows, U loads in flight; greedy\n"
            "                                decoding takes the token from it (auto: 8:16:528:2 float,\n"
            "                                4:0:528:2 Q8_0/Q4_0) [float weights: auto's; Q8_0/Q4_0: 0,\n"
            "                                the fused product + argmax]\n"
            "  WGT_QLINEAR_QKV_BLOCKS=auto|0|1[:WG]  Q8_0/Q4_0 q/k/v + rope kernel: a whole block a lane,\n"
            "                                x * gamma staged, WG invocations a workgroup (tuning) [auto:\n"
            "                                rows of 64 blocks or more]; 1: every row; 0: 8-element pieces\n"
            "  WGT_FUSED_LINEAR_STAGE=0|1    float decode: SwiGLU's input to the down projection computed once\n"
            "                                a workgroup in workgroup memory (1) [0: once per row]\n"
            "  WGT_FUSED_LINEAR_ROWS=auto|R  float decode products: R rows (1, 2, 4, 8) a group of lanes\n"
            "                                share each lane's input and norm [auto: 8 where N >= 32768, 4\n"
            "                                where N >= 16384, else 2]; 0: a row a group (comparisons)\n"
            "  WGT_ATTENTION_DECODE=v4[:MAX] decode attention over f32 caches read as 16-byte words, up to\n"
            "                                MAX keys [v4:2048]; 0: attention_decode.wgsl, split kernels past 256\n"
            "  WGT_ATTENTION_DECODE_SG=1|all|0  v4's softmax reductions through subgroup operations, in\n"
            "                                workgroups of up to 256 invocations (all: 1024 too) [1]\n"
            "  WGT_ATTENTION_DECODE_PRE=1|0   v4 reads q into registers and its first value rows before the\n"
            "                                scores (up to 256 invocations, D <= 128) [1]\n"
            "  WGT_MOE_KERNELS=0|1           mixtures of experts: only the chosen experts' weights are read,\n"
            "                                in place (decode), and prefill groups tokens by expert [1];\n"
            "                                0: float experts gathered, every quantized one run, dense prefill\n"
            "  WGT_MEMORY_LIMIT=bytes        the most memory a model may need, e.g. 64G (weights + KV cache +\n"
            "                                activations, estimated before loading) [the host's physical memory]\n"
            "  WGT_THREADS=n                 wgt convert's threads [the processors online, at most 64]\n"
            "  WGT_TRAIN_COMPOSED=0|1        training: the composed forms of the fused training ops (a\n"
            "                                reference) [0: the fused kernels]\n"
            "  WGT_API_KEY=key               wgt serve: the bearer key clients must send, like --api-key\n"
            "                                [unset: no key]\n"
            "  EGL_PLATFORM=surfaceless      for the OpenGL backends without a display [set to surfaceless]\n");
}

static void print_adapter(const wgt_adapter_info *i)
{
    printf("adapter:   %s\n", i->name);
    printf("backend:   %s%s (%s adapter)\n", i->backend_name, i->compat ? ", compatibility mode" : "",
           i->is_cpu ? "CPU" : "GPU");
    printf("driver:    %s\n", i->driver[0] ? i->driver : "(not reported)");
    if (i->webgpu_lib[0]) printf("library:   %s\n           %s\n", i->webgpu_lib, i->webgpu_lib_description);
    if (i->vendor[0] || i->architecture[0]) printf("vendor:    %s %s\n", i->vendor, i->architecture);
    printf("features:  shader-f16 %s, subgroups %s", i->has_f16 ? "yes" : "no", i->has_subgroups ? "yes" : "no");
    if (i->has_subgroups) printf(" (size %u-%u)", i->limits.subgroup_min_size, i->limits.subgroup_max_size);
    printf(", timestamp-query %s,\n           subgroup-matrix %s", i->has_timestamps ? "yes" : "no",
           i->has_subgroup_matrix ? "yes" : "no");
    for (int k = 0; k < i->n_subgroup_matrix_configs; k++)
        printf("%s%s x %s -> %s %ux%ux%u", k ? ", " : " (", wgt_dtype_name(i->subgroup_matrix_configs[k].component),
               wgt_dtype_name(i->subgroup_matrix_configs[k].component),
               wgt_dtype_name(i->subgroup_matrix_configs[k].result), i->subgroup_matrix_configs[k].m,
               i->subgroup_matrix_configs[k].n, i->subgroup_matrix_configs[k].k);
    printf("%s\n", i->n_subgroup_matrix_configs ? ")" : "");
    const wgt_limits *l = &i->limits;
    printf("limits:    max buffer %llu MiB, storage binding %llu MiB, %u storage buffers per stage,\n"
           "           workgroup storage %u KiB, %u invocations per workgroup, %u workgroups per dimension,\n"
           "           storage offset alignment %u\n",
           (unsigned long long)(l->max_buffer_size >> 20), (unsigned long long)(l->max_storage_buffer_binding_size >> 20),
           l->max_storage_buffers_per_shader_stage, l->max_compute_workgroup_storage_size >> 10,
           l->max_compute_invocations_per_workgroup, l->max_compute_workgroups_per_dimension,
           l->min_storage_buffer_offset_alignment);
}

static int list_adapters(void)
{
    wgt_adapter_info infos[8];
    int n = 0;
    wgt_status st = wgt_list_adapters(NULL, infos, 8, &n);
    if (st) {
        fprintf(stderr, "wgt info: %s\n", wgt_errmsg());
        return 1;
    }
    for (int i = 0; i < n && i < 8; i++)
        printf("%d: %s [%s%s, %s] %s\n", i, infos[i].name, infos[i].backend_name, infos[i].compat ? ", compat" : "",
               infos[i].is_cpu ? "CPU" : "GPU", infos[i].driver);
    if (n == 0) printf("no adapters\n");
    return n ? 0 : 1;
}

int cmd_info(int argc, char **argv)
{
    size_t n = 16u << 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: wgt info [--adapters] [--selfcheck-floats N]\n"
                   "       wgt info <model.gguf | model.safetensors | hf-dir> [--tensors]\n\n"
                   "Without a path: prints the adapter, backend, driver, features and limits, then runs a\n"
                   "self-check kernel over N floats (default 16M) against the CPU and prints its bandwidth.\n"
                   "Exits non-zero if no device can be created or the self-check fails.\n\n");
            print_env_help(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--adapters")) return list_adapters();
        if (!strcmp(argv[i], "--selfcheck-floats")) {
            int64_t v;
            if (i + 1 >= argc) {
                fprintf(stderr, "wgt info: --selfcheck-floats needs a value (a whole number from 1 to 2^40)\n");
                return 2;
            }
            if (args_parse_int("info", "--selfcheck-floats", argv[++i], 1, (int64_t)1 << 40, &v)) return 2;
            n = (size_t)v;
            continue;
        }
        if (argv[i][0] != '-') return cmd_info_file(argc, argv);
        fprintf(stderr, "wgt info: unknown option '%s' (see wgt info --help)\n", argv[i]);
        return 2;
    }
    wgt_context *ctx;
    if (wgt_context_create(NULL, &ctx)) {
        fprintf(stderr, "wgt info: %s\n", wgt_errmsg());
        return 1;
    }
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    print_adapter(&info);
    /* the check runs in one binding: a larger count is refused rather than checked on fewer floats */
    uint64_t max_floats = info.limits.max_storage_buffer_binding_size / 16 * 4;
    if (n > max_floats) {
        fprintf(stderr, "wgt info: --selfcheck-floats %zu is more than one storage binding of this adapter holds: "
                        "give at most %llu\n", n, (unsigned long long)max_floats);
        wgt_context_free(ctx);
        return 2;
    }
    double gbps = 0;
    wgt_status st = wgt_context_selfcheck(ctx, n, &gbps);
    if (st)
        printf("self-check: FAIL on %zu floats: %s\n", n, wgt_context_errmsg(ctx));
    else
        printf("self-check: PASS on %zu floats (y = 1.5x - 0.25 vs the CPU), %.2f GB/s read+write\n", n, gbps);
    wgt_context_free(ctx);
    return st ? 1 : 0;
}

