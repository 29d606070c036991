/* wgt: the command-line tool. Uses the public API only. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "wgt.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"info", cmd_info, "the adapter, its features and limits, and a self-check; or a model file"},
    {"generate", cmd_generate, "text from a language model (HF directory or GGUF), streamed, with tok/s"},
    {"chat", cmd_chat, "talk to a language model through its chat template (interactive, KV cache kept)"},
    {"serve", cmd_serve, "an OpenAI-compatible HTTP server with continuous batching: -m MODEL [--port P]"},
    {"bench", cmd_bench, "benchmarks: --device (dispatch cost, latency, bandwidth), -m MODEL (tok/s)"},
    {"tokenize", cmd_tokenize, "text to token ids: -t TOKENIZER [--file F | TEXT]"},
    {"detokenize", cmd_detokenize, "token ids to text: -t TOKENIZER ID..."},
    {"convert", cmd_convert, "a Hugging Face checkpoint to GGUF: <hf-dir|.safetensors> <out.gguf> --type T"},
    {"ops", cmd_ops, "the op x dtype table (GPU or fallback); --check [OP...] the op harness; --describe"},
    {"onnx-test", cmd_onnx_test, "ONNX node test directories on the device: PASS / FAIL / N/A per test"},
    {"train", cmd_train, "train or fine-tune a model on the GPU: --from MODEL --data FILE --steps N --out DIR"},
};

static void usage(FILE *f)
{
    fprintf(f, "wgt %s: tensors and language models on WebGPU\n\nusage: wgt <command> [options]\n\n",
            wgt_version());
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`wgt <command> --help` describes a command. Environment variables (WGT_BACKEND,\n"
               "WGT_ADAPTER, WGT_DEBUG, ...) are listed in `wgt info --help`.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("wgt %s\n", wgt_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "wgt: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
