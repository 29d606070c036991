/* Chat templates: placeholder until the Jinja subset lands. */
#include "tokenizer/tokenizer_internal.h"

wgt_status tok_render_template(const char *tmpl, const wgt_chat_message *msgs, size_t n, int add_gen,
                               const char *bos, const char *eos, char **out)
{
    return wgt_error(WGT_ERR_UNSUPPORTED, "chat templates are not implemented yet");
}
