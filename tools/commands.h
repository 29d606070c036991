/* The wgt CLI's subcommands: each takes argc/argv from the subcommand name on and returns the
 * process exit status. One line in the table in main.c per command. */
#ifndef WGT_TOOLS_COMMANDS_H
#define WGT_TOOLS_COMMANDS_H

#include <stdio.h>

int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_chat(int argc, char **argv);      /* tools/chat.c */
int cmd_serve(int argc, char **argv);     /* tools/serve.c: the OpenAI-compatible server */
int cmd_tokenize(int argc, char **argv);   /* tools/tokenize.c */
int cmd_detokenize(int argc, char **argv); /* tools/tokenize.c */
int cmd_info_file(int argc, char **argv); /* tools/fileinfo.c: wgt info <model file> */
int cmd_convert(int argc, char **argv);   /* tools/convert.c: HF checkpoint -> GGUF */
int cmd_ops(int argc, char **argv);        /* tools/ops.c: the op x dtype table, --check runs the harness */
int cmd_onnx_test(int argc, char **argv);  /* tools/onnx_test.c: ONNX node tests on the device */
int cmd_train(int argc, char **argv);      /* tools/train.c: train or fine-tune a model */

/* The whole of f into *out (malloc'd, with room for a terminating NUL after *len bytes); -1 when
 * out of memory. Defined in tools/tokenize.c. */
int tool_read_all(FILE *f, char **out, size_t *len);
/* 1 when a --template value is a family name (chatml, llama3, llama2, mistral) or @FILE; else
 * prints why under "wgt CMD:" and returns 0 (a typo must not be rendered as the template). */
int tool_template_ok(const char *cmd, const char *tmpl);

#endif
