/* libFuzzer target: the chat-template engine (a Jinja subset). The input is a template; after
 * its first NUL byte come the messages' contents, separated by NUL bytes (roles cycle through
 * system, user, assistant). Rendered with and without the generation prompt and with variables,
 * by the renderer behind wgt_tokenizer_apply_chat_template (which wants a tokenizer only for its
 * BOS/EOS texts and its own template). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "wgt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    static const char *const roles[] = {"system", "user", "assistant"};
    wgt_chat_message msgs[8];
    size_t n = 0;
    char *p = memchr(buf, 0, size);
    while (p && n < 8 && p < buf + size) {
        msgs[n].role = roles[n % 3];
        msgs[n].content = p + 1;
        n++;
        p = memchr(p + 1, 0, (size_t)(buf + size - (p + 1)));
    }
    if (!n) {
        msgs[0] = (wgt_chat_message){"user", "Hello"};
        n = 1;
    }
    static const char *const vars[] = {"enable_thinking=false", "x=3", "tools=[]"};
    for (int gen = 0; gen < 2; gen++) {
        char *out = NULL;
        if (!tok_render_template(buf, msgs, n, gen, "<s>", "</s>", vars, gen ? 3 : 0, &out)) free(out);
    }
    free(buf);
    return 0;
}
