/* The backward rules: the RULE rows of the op table (src/ops/<family>.def, columns in
 * src/ops/optable.h), each naming its recorder id (src/tensor/record.h), its formula
 * (grad_<family>.c) and the tensors its node saves (bit i: input i, AG_SAVE_OUT: the output). */
#include "autograd/autograd.h"

#define IN(i) (1u << (i))

#define RULE(name, op, backward, saves, saves_fn) {name, op, backward, saves, saves_fn},
static const ag_rule rules[] = {
#include "ops/optable_all.h"
};
#undef RULE

const ag_rule *ag_rule_of(op_grad_id op)
{
    static const ag_rule *by_id[OP_GRAD_COUNT];
    static int indexed;
    if (!indexed) {
        for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) by_id[rules[i].op] = &rules[i];
        indexed = 1;
    }
    return (unsigned)op < OP_GRAD_COUNT ? by_id[op] : NULL;
}
