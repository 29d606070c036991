/* wgt train: train or fine-tune a language model on the GPU, writing a Hugging Face directory.
 * Everything the user gave is checked before the first step (model, data, lengths, ids, memory);
 * checkpoints (model, optimizer state, step) are written whole or not at all, and --resume
 * continues one bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>

#include "args.h"
#include "commands.h"
#include "io/json_util.h"
#include "train_svg.h"
#include "wgt.h"

typedef struct opts {
    const char *from, *config, *tokenizer, *data, *data_ids, *eval_ids, *out, *resume, *optimizer, *schedule, *dtype, *betas;
    int64_t steps, batch, seq, warmup, eval_every, save_every;
    double lr, eps, weight_decay, momentum, clip, dropout, loss_scale, min_lr;
    int have_lr, have_eps, have_wd, have_momentum, no_shuffle, print_loss, no_decay_1d, keep_best, dropout_blocks_only, graph;
    uint64_t seed;
} opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wgt train (--from MODEL | --config config.json --tokenizer TOK)\n"
            "                 (--data FILE.txt | --data-ids FILE.jsonl) --steps N --batch B --seq L --out DIR\n"
            "                 [options]\n\n"
            "MODEL is anything `wgt generate` reads with float weights (a Hugging Face directory, or a GGUF\n"
            "file in f32/f16/bf16); --config starts from random weights of that shape (N(0, 0.02), norms 1).\n"
            "--data: text, tokenized with the model's tokenizer and cut into sequences of L+1 tokens; the\n"
            "last 5%% of them are held out for evaluation. --data-ids: JSON lines, each a list of L+1 ids.\n"
            "Each step takes B sequences; inputs are the first L ids, targets the last L; the loss is the\n"
            "mean cross-entropy over all B x L targets.\n\n"
            "  --lr LR                 peak learning rate (default 1e-3)\n"
            "  --optimizer NAME        adamw (default), adam, sgd\n"
            "  --betas B1,B2 --eps E   Adam/AdamW (default 0.9,0.999 and 1e-8)\n"
            "  --weight-decay WD       default 0.01 for adamw, 0 otherwise\n"
            "  --no-decay-1d           no weight decay on 1-D parameters (norm weights, biases)\n"
            "  --momentum M            SGD (default 0)\n"
            "  --schedule S            constant (default), cosine, linear: after --warmup W steps of\n"
            "                          linear warmup (transformers' schedules; the first step's lr is 0\n"
            "                          when W > 0)\n"
            "  --clip-norm C           clip the global gradient norm to C (default: no clipping)\n"
            "  --seed S                data order and random init (default 0)\n"
            "  --no-shuffle            take the sequences in file order (default: shuffled per epoch)\n"
            "  --dtype f32|bf16|f16    activations' precision (default f32): bf16/f16 cast the f32 master\n"
            "                          weights to half copies each step, keep the optimizer in f32 and the\n"
            "                          loss in f32; f16 scales the loss (dynamic, skipping a step whose\n"
            "                          gradients overflow)\n"
            "  --loss-scale S          initial loss scale (dynamic; default 65536 with f16 or WGT_MATMUL_TC,\n"
            "                          whose f16 operands flush small gradients to zero unscaled; none\n"
            "                          otherwise unless given)\n"
            "  --dropout P             dropout after the embedding, attention output and MLP (default 0),\n"
            "                          the same masks for the same --seed\n"
            "  --dropout-blocks-only   none after the embedding (as hooks on transformers' self_attn and mlp)\n"
            "  --min-lr R              cosine/linear decay down to R x --lr instead of 0 (R in [0, 1])\n"
            "  --eval-every K          held-out loss every K steps (default: every steps/10, and at the end)\n"
            "  --eval-ids FILE.jsonl   the held-out sequences (JSON lines of 2 to L+1 ids, shorter ones\n"
            "                          padded: their missing targets not counted; up to 16 batches of\n"
            "                          them are evaluated) instead of the tail of --data\n"
            "  --keep-best             DIR gets the weights of the best held-out loss, written at each\n"
            "                          evaluation that improves it, not the last step's\n"
            "  --save-every K          checkpoint DIR/checkpoint every K steps (optimizer state included)\n"
            "  --resume CKPT           continue from a checkpoint directory (same --batch, --seq, --seed)\n"
            "  --graph                 capture the step once (the second) and replay it: one submit a step,\n"
            "                          chains fused; the same losses as without (steps with loss scaling\n"
            "                          or dropout stay eager)\n"
            "  --print-loss            print `step <n> loss <value>` on stdout for every step, nothing\n"
            "                          else on stdout (no progress bar)\n"
            "Writes DIR/config.json, DIR/model.safetensors (f32), the tokenizer files when known, and\n"
            "DIR/loss_curve.svg, and DIR/training.json (each step's loss, the held-out losses; rewritten at\n"
            "each evaluation). Progress on stderr: step, loss, eval loss, tokens/s, GPU memory, ETA.\n");
}

static int fail(const char *what)
{
    fprintf(stderr, "wgt train: %s%s%s\n", what, *wgt_errmsg() ? ": " : "", wgt_errmsg());
    return 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->optimizer = "adamw", o->schedule = "constant", o->dtype = "f32";
    o->eval_every = -1;
    args a = args_begin("train", argc, argv);
    while (args_next(&a)) {
        if (args_flag(&a, "-h|--help")) {
            usage(stdout);
            exit(0);
        } else if (args_str(&a, "--from|-m", &o->from) || args_str(&a, "--config", &o->config) ||
                   args_str(&a, "--tokenizer|-t", &o->tokenizer) || args_str(&a, "--data", &o->data) ||
                   args_str(&a, "--data-ids", &o->data_ids) || args_str(&a, "--eval-ids", &o->eval_ids) || args_str(&a, "--out|-o", &o->out) ||
                   args_str(&a, "--resume", &o->resume) || args_str(&a, "--optimizer", &o->optimizer) ||
                   args_str(&a, "--schedule", &o->schedule) || args_str(&a, "--dtype", &o->dtype) ||
                   args_str(&a, "--betas", &o->betas))
            ;
        else if (args_int(&a, "--steps", 1, INT32_MAX, &o->steps) || args_int(&a, "--batch", 1, 1 << 20, &o->batch) ||
                 args_int(&a, "--seq", 1, 1 << 20, &o->seq) || args_int(&a, "--warmup", 0, INT32_MAX, &o->warmup) ||
                 args_int(&a, "--eval-every", 0, INT32_MAX, &o->eval_every) ||
                 args_int(&a, "--save-every", 0, INT32_MAX, &o->save_every))
            ;
        else if (args_double(&a, "--lr", 0, 1, 10, &o->lr)) o->have_lr = 1;
        else if (args_double(&a, "--eps", 0, 0, 1, &o->eps)) o->have_eps = 1;
        else if (args_double(&a, "--weight-decay|--wd", 0, 0, 10, &o->weight_decay)) o->have_wd = 1;
        else if (args_double(&a, "--momentum", 0, 0, 1, &o->momentum)) o->have_momentum = 1;
        else if (args_double(&a, "--clip-norm", 0, 1, 1e30, &o->clip) || args_double(&a, "--dropout", 0, 0, 1, &o->dropout) ||
                 args_double(&a, "--loss-scale", 0, 1, 1e38, &o->loss_scale) ||
                 args_double(&a, "--min-lr", 0, 0, 1, &o->min_lr))
            ;
        else if (args_u64(&a, "--seed", UINT64_MAX, &o->seed))
            ;
        else if (args_flag(&a, "--no-shuffle")) o->no_shuffle = 1;
        else if (args_flag(&a, "--print-loss")) o->print_loss = 1;
        else if (args_flag(&a, "--no-decay-1d")) o->no_decay_1d = 1;
        else if (args_flag(&a, "--keep-best")) o->keep_best = 1;
        else if (args_flag(&a, "--dropout-blocks-only")) o->dropout_blocks_only = 1;
        else if (args_flag(&a, "--graph")) o->graph = 1;
        else return args_unknown(&a);
    }
    if (a.bad) return 2;
    const char *missing = !o->from && !o->config && !o->resume ? "--from MODEL or --config config.json"
                          : !o->data && !o->data_ids                ? "--data FILE.txt or --data-ids FILE.jsonl"
                          : !o->steps                               ? "--steps N"
                          : !o->batch                               ? "--batch B"
                          : !o->seq                                 ? "--seq L"
                          : !o->out                                 ? "--out DIR"
                                                                    : NULL;
    if (missing) {
        fprintf(stderr, "wgt train: %s is required (wgt train --help)\n", missing);
        return 2;
    }
    if ((o->from != NULL) + (o->config != NULL) > 1 || (o->data && o->data_ids)) {
        fprintf(stderr, "wgt train: give one of --from / --config, and one of --data / --data-ids\n");
        return 2;
    }
    if (o->config && !o->tokenizer && o->data) {
        fprintf(stderr, "wgt train: --config with --data needs --tokenizer TOK to tokenize the text\n");
        return 2;
    }
    if (strcmp(o->dtype, "f32") && strcmp(o->dtype, "bf16") && strcmp(o->dtype, "f16")) {
        fprintf(stderr, "wgt train: --dtype %s: use f32, bf16 or f16\n", o->dtype);
        return 2;
    }
    if (o->dropout >= 1) {
        fprintf(stderr, "wgt train: --dropout %g: give a probability in [0, 1)\n", o->dropout);
        return 2;
    }
    return 0;
}

static int optimizer_options(const opts *o, wgt_trainer_options *t)
{
    *t = wgt_trainer_defaults();
    wgt_optimizer_kind k;
    if (!strcmp(o->optimizer, "adamw")) k = WGT_OPTIM_ADAMW;
    else if (!strcmp(o->optimizer, "adam")) k = WGT_OPTIM_ADAM;
    else if (!strcmp(o->optimizer, "sgd")) k = WGT_OPTIM_SGD;
    else {
        fprintf(stderr, "wgt train: --optimizer '%s': use adamw, adam or sgd\n", o->optimizer);
        return 2;
    }
    t->optim = wgt_optimizer_defaults(k);
    if (o->have_lr) t->optim.lr = o->lr;
    if (o->have_eps) t->optim.eps = o->eps;
    if (o->have_wd) t->optim.weight_decay = o->weight_decay;
    if (o->have_momentum) t->optim.momentum = o->momentum;
    if (o->betas) {
        char *end;
        double b1 = strtod(o->betas, &end), b2 = *end == ',' ? strtod(end + 1, &end) : NAN;
        if (*end || !(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1)) {
            fprintf(stderr, "wgt train: --betas '%s': give B1,B2, each in [0, 1) (e.g. 0.9,0.999)\n", o->betas);
            return 2;
        }
        t->optim.beta1 = b1, t->optim.beta2 = b2;
    }
    if (!strcmp(o->schedule, "constant")) t->schedule = WGT_LR_CONSTANT;
    else if (!strcmp(o->schedule, "cosine")) t->schedule = WGT_LR_COSINE;
    else if (!strcmp(o->schedule, "linear")) t->schedule = WGT_LR_LINEAR;
    else {
        fprintf(stderr, "wgt train: --schedule '%s': use constant, cosine or linear\n", o->schedule);
        return 2;
    }
    t->warmup = o->warmup;
    t->total_steps = o->steps;
    t->clip_norm = o->clip;
    t->dtype = !strcmp(o->dtype, "bf16") ? WGT_BF16 : !strcmp(o->dtype, "f16") ? WGT_F16 : WGT_F32;
    t->dropout = o->dropout;
    t->dropout_seed = o->seed;
    t->loss_scale = o->loss_scale;
    t->min_lr_ratio = o->min_lr;
    t->no_decay_1d = o->no_decay_1d;
    t->dropout_blocks_only = o->dropout_blocks_only;
    t->graph = o->graph;
    return 0;
}

/* The run's settings that a resume must share, as the checkpoint's trainer.json holds them. */
static char *state_json(const opts *o, const double *loss, int64_t n, const int64_t *es, const double *el, int64_t ne)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "batch", (double)o->batch);
    cJSON_AddNumberToObject(j, "seq", (double)o->seq);
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    cJSON_AddStringToObject(j, "seed", seed);
    cJSON_AddBoolToObject(j, "shuffle", !o->no_shuffle);
    cJSON_AddStringToObject(j, "dtype", o->dtype);
    cJSON_AddNumberToObject(j, "dropout", o->dropout);
    if (o->dropout_blocks_only) cJSON_AddTrueToObject(j, "dropout_blocks_only");
    cJSON *l = cJSON_AddArrayToObject(j, "losses");
    for (int64_t i = 0; i < n; i++) cJSON_AddItemToArray(l, cJSON_CreateNumber(loss[i]));
    cJSON *s = cJSON_AddArrayToObject(j, "eval_steps"), *e = cJSON_AddArrayToObject(j, "eval_losses");
    for (int64_t i = 0; i < ne; i++) {
        cJSON_AddItemToArray(s, cJSON_CreateNumber((double)es[i]));
        cJSON_AddItemToArray(e, cJSON_CreateNumber(el[i]));
    }
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

/* --resume DIR without its trainer.json: name the checkpoint a stopped replacement left aside. */
static void resume_missing(const char *dir)
{
    char old[1200];
    struct stat sb;
    snprintf(old, sizeof old, "%s.old/trainer.json", dir);
    if (stat(old, &sb) == 0)
        fprintf(stderr, "wgt train: --resume %s: no trainer.json there, but %s.old has one: the run was stopped "
                        "while it replaced its checkpoint; resume from %s.old\n", dir, dir, dir);
    else
        fprintf(stderr, "wgt train: --resume %s: no trainer.json there (is it a checkpoint directory that "
                        "`wgt train --save-every` wrote?)\n", dir);
}

/* Read a checkpoint's trainer.json: check it belongs to this run, restore the curve so far. */
static int read_state(const opts *o, int64_t *step, double *loss, int64_t *es, double *el, int64_t *ne)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/trainer.json", o->resume);
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0;
    if (!f || tool_read_all(f, &text, &len)) {
        if (f) fclose(f);
        resume_missing(o->resume);
        return 1;
    }
    fclose(f);
    text[len] = 0;
    cJSON *j = NULL;
    wgt_status jst = wgt_json_parse(text, len, path, &j);
    free(text);
    if (jst) {
        fprintf(stderr, "wgt train: %s\n", wgt_errmsg());
        return 1;
    }
    const cJSON *b = cJSON_GetObjectItem(j, "batch"), *s = cJSON_GetObjectItem(j, "seq"),
                *sd = cJSON_GetObjectItem(j, "seed"), *sh = cJSON_GetObjectItem(j, "shuffle"),
                *st = cJSON_GetObjectItem(j, "step");
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    if (!cJSON_IsNumber(b) || !cJSON_IsNumber(s) || !cJSON_IsString(sd) || !cJSON_IsNumber(st)) {
        cJSON_Delete(j);
        fprintf(stderr, "wgt train: %s: batch, seq, seed or step missing\n", path);
        return 1;
    }
    const cJSON *dt = cJSON_GetObjectItem(j, "dtype"), *dp = cJSON_GetObjectItem(j, "dropout");
    const char *dtype = cJSON_IsString(dt) ? dt->valuestring : "f32"; /* checkpoints from before --dtype */
    double dropout = cJSON_IsNumber(dp) ? dp->valuedouble : 0;
    if ((int64_t)b->valuedouble != o->batch || (int64_t)s->valuedouble != o->seq || strcmp(sd->valuestring, seed) ||
        cJSON_IsTrue(sh) != !o->no_shuffle || strcmp(dtype, o->dtype) || dropout != o->dropout ||
        cJSON_IsTrue(cJSON_GetObjectItem(j, "dropout_blocks_only")) != o->dropout_blocks_only) {
        fprintf(stderr, "wgt train: --resume %s was made with --batch %lld --seq %lld --seed %s --dtype %s --dropout %g%s%s: "
                        "give the same to continue that run\n", o->resume, (long long)b->valuedouble,
                (long long)s->valuedouble, sd->valuestring, dtype, dropout,
                cJSON_IsTrue(cJSON_GetObjectItem(j, "dropout_blocks_only")) ? " --dropout-blocks-only" : "",
                cJSON_IsTrue(sh) ? "" : " --no-shuffle");
        cJSON_Delete(j);
        return 1;
    }
    *step = (int64_t)st->valuedouble;
    const cJSON *it;
    int64_t i = 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "losses")) if (i < o->steps) loss[i++] = it->valuedouble;
    i = 0;
    const cJSON *evs = cJSON_GetObjectItem(j, "eval_steps"), *evl = cJSON_GetObjectItem(j, "eval_losses");
    cJSON_ArrayForEach(it, evs) if (i < o->steps + 1) es[i++] = (int64_t)it->valuedouble;
    *ne = i;
    i = 0;
    cJSON_ArrayForEach(it, evl) if (i < *ne) el[i++] = it->valuedouble;
    cJSON_Delete(j);
    return 0;
}

/* The held-out loss: the mean over the targets of up to 16 batches of sequences first .. first + n - 1
 * of d (padding not counted). */
static int eval_loss(wgt_trainer *t, const wgt_dataset *d, int64_t first, int64_t n, int64_t B, int64_t L, int32_t *ids,
                     double *out)
{
    int64_t done = 0, tokens = 0;
    double sum = 0, wsum = 0;
    int batches = 0;
    while (done < n && batches < 16) {
        int64_t k = n - done < B ? n - done : B;
        for (int64_t r = 0; r < k; r++) memcpy(ids + r * (L + 1), wgt_dataset_sequence(d, first + done + r), (size_t)(L + 1) * sizeof *ids);
        double l;
        if (wgt_trainer_eval(t, ids, k, L, &l)) return 1;
        int64_t counted = 0; /* targets that are not padding (--eval-ids lines shorter than L + 1) */
        for (int64_t i = 0; i < k * (L + 1); i++) counted += i % (L + 1) > 0 && ids[i] != -1;
        sum += l * (double)k, wsum += l * (double)counted;
        tokens += counted;
        done += k, batches++;
    }
    /* rows all of L targets: the mean of the batches' means weighted by rows, as before padding */
    *out = tokens == done * L ? (done ? sum / (double)done : NAN) : tokens ? wsum / (double)tokens : NAN;
    return 0;
}

/* DIR/training.json: the run's settings, every step's loss so far and the held-out losses, written to
 * a temporary name and renamed (a reader never sees half a file). */
static void write_log(const opts *o, const char *src, const double *loss, int64_t n, const int64_t *es, const double *el,
                      int64_t ne, int64_t best_step, double seconds, double tok_s)
{
    char *state = state_json(o, loss, n, es, el, ne);
    cJSON *j = NULL;
    if (!state) {
        fprintf(stderr, "wgt train: training.json not written: out of host memory\n");
        return;
    }
    wgt_status st = wgt_json_parse(state, strlen(state), "training.json", &j);
    free(state);
    if (st) {
        fprintf(stderr, "wgt train: training.json not written: %s\n", wgt_errmsg());
        return;
    }
    cJSON_AddStringToObject(j, "model", src);
    cJSON_AddNumberToObject(j, "steps", (double)n);
    cJSON_AddNumberToObject(j, "total_steps", (double)o->steps);
    cJSON_AddNumberToObject(j, "seconds", seconds);
    cJSON_AddNumberToObject(j, "tokens_per_second", tok_s);
    if (best_step > 0) cJSON_AddNumberToObject(j, "saved_step", (double)best_step);
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    char path[1200], tmp[1210];
    snprintf(path, sizeof path, "%s/training.json", o->out);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = text ? fopen(tmp, "w") : NULL;
    if (f) {
        int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
        if (fclose(f) == 0 && ok) rename(tmp, path);
    }
    free(text);
}

/* bytes as GiB, or MiB below one (a tiny model's figures read 0.00 GiB otherwise) */
static const char *fmt_size(double b, char *buf, size_t n)
{
    if (b >= 1073741824.0) snprintf(buf, n, "%.2f GiB", b / 1073741824.0);
    else snprintf(buf, n, "%.1f MiB", b / 1048576.0);
    return buf;
}

static void fmt_time(double s, char *buf, size_t n)
{
    if (!(s >= 0) || s > 1e7) snprintf(buf, n, "?");
    else if (s >= 3600) snprintf(buf, n, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
    else snprintf(buf, n, "%d:%02d", (int)s / 60, (int)s % 60);
}

int cmd_train(int argc, char **argv)
{
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc;
    wgt_trainer_options to;
    if ((rc = optimizer_options(&o, &to))) return rc;
    wgt_output_cleanup_on_signals();
    if (o.resume) {
        char state[1200];
        struct stat sb;
        snprintf(state, sizeof state, "%s/trainer.json", o.resume);
        if (stat(state, &sb) != 0) {
            resume_missing(o.resume);
            return 1;
        }
    }

    wgt_context *ctx = NULL;
    wgt_train_model *m = NULL;
    wgt_dataset *d = NULL, *ev = NULL;
    wgt_trainer *t = NULL;
    int32_t *ids = NULL;
    double *losses = calloc((size_t)o.steps, sizeof *losses), *ev_loss = calloc((size_t)o.steps + 1, sizeof *ev_loss);
    int64_t *ev_step = calloc((size_t)o.steps + 1, sizeof *ev_step), n_ev = 0, start = 0;
    rc = 1;
    if (!losses || !ev_loss || !ev_step) {
        fprintf(stderr, "wgt train: out of host memory\n");
        goto done;
    }
    if (wgt_context_create(NULL, &ctx)) {
        fail("no device");
        goto done;
    }
    /* the model: a checkpoint to resume, a model, or a configuration's fresh weights */
    const char *src = o.resume ? o.resume : o.from ? o.from : o.config;
    wgt_train_init init = {o.seed, 0};
    if (wgt_train_model_open(ctx, src, &init, &m)) {
        fail(src);
        goto done;
    }
    if (o.tokenizer) {
        wgt_tokenizer *tok;
        if (wgt_tokenizer_open(o.tokenizer, &tok)) {
            fail(o.tokenizer);
            goto done;
        }
        wgt_train_model_set_tokenizer(m, tok);
    }
    int64_t V = wgt_train_model_vocab(m), maxpos = wgt_train_model_max_positions(m);
    if (maxpos > 0 && o.seq > maxpos) {
        fprintf(stderr, "wgt train: --seq %lld is longer than the model's %lld positions\n", (long long)o.seq,
                (long long)maxpos);
        rc = 2;
        goto done;
    }
    /* the data, checked whole before the first step */
    if (o.data) {
        wgt_tokenizer *tok = wgt_train_model_tokenizer(m);
        if (!tok) {
            fprintf(stderr, "wgt train: %s has no tokenizer to read --data with: give --tokenizer TOK, or token ids "
                            "with --data-ids\n", src);
            goto done;
        }
        if (wgt_tokenizer_vocab_size(tok) > V)
            fprintf(stderr, "wgt train: note: the tokenizer has %d ids, the model %lld: text that gives a larger id "
                            "is refused\n", wgt_tokenizer_vocab_size(tok), (long long)V);
        if (wgt_dataset_open_text(o.data, tok, o.seq, 0.05, &d)) {
            fail("--data");
            goto done;
        }
        for (int64_t i = 0; i < wgt_dataset_train_count(d) + wgt_dataset_eval_count(d); i++) {
            const int32_t *s = wgt_dataset_sequence(d, i);
            for (int64_t j = 0; j <= o.seq; j++)
                if (s[j] >= V) {
                    fprintf(stderr, "wgt train: %s: the tokenizer gives id %d, outside the model's vocabulary of %lld "
                                    "(a tokenizer of another model?)\n", o.data, s[j], (long long)V);
                    goto done;
                }
        }
    } else if (wgt_dataset_open_ids(o.data_ids, V, o.seq, &d)) {
        fail("--data-ids");
        goto done;
    }
    if (o.eval_ids && wgt_dataset_open_ids_padded(o.eval_ids, V, o.seq, &ev)) {
        fail("--eval-ids");
        goto done;
    }
    /* the held-out sequences: --eval-ids, else the tail of the data */
    const wgt_dataset *ed = ev ? ev : d;
    int64_t ev_first = ev ? 0 : wgt_dataset_train_count(d),
            ev_n = ev ? wgt_dataset_train_count(ev) + wgt_dataset_eval_count(ev) : wgt_dataset_eval_count(d);
    if (o.keep_best && ev_n < 1) {
        fprintf(stderr, "wgt train: --keep-best needs held-out sequences (--eval-ids, or --data long enough to hold "
                        "some out)\n");
        rc = 2;
        goto done;
    }
    double need = 0;
    if (wgt_train_check_memory(m, o.batch, o.seq, &need)) {
        fail("--batch/--seq");
        goto done;
    }
    /* the output directory: made now, so a path that cannot be one fails before any step */
    struct stat sb;
    if (stat(o.out, &sb) == 0 ? !S_ISDIR(sb.st_mode) : mkdir(o.out, 0777) != 0) {
        fprintf(stderr, "wgt train: --out %s: not a directory that can be written (it exists as a file, or its "
                        "parent is missing or read-only)\n", o.out);
        goto done;
    }
    if (wgt_trainer_create(m, &to, &t)) {
        fail("optimizer");
        goto done;
    }
    if (o.resume) {
        if (read_state(&o, &start, losses, ev_step, ev_loss, &n_ev)) goto done;
        if (wgt_trainer_load(t, o.resume)) {
            fail(o.resume);
            goto done;
        }
        if (start >= o.steps) {
            fprintf(stderr, "wgt train: %s is at step %lld already; --steps %lld asks for no more\n", o.resume,
                    (long long)start, (long long)o.steps);
            rc = 2;
            goto done;
        }
    }
    ids = malloc((size_t)(o.batch * (o.seq + 1)) * sizeof *ids);
    if (!ids) {
        fprintf(stderr, "wgt train: out of host memory\n");
        goto done;
    }
    int64_t eval_every = o.eval_every >= 0 ? o.eval_every : (o.steps >= 10 ? o.steps / 10 : 1);
    int has_eval = ev_n > 0;
    int64_t best_step = 0;
    double best_eval = INFINITY;
    int tty = isatty(2);
    char need_s[32];
    if (!o.print_loss)
        fprintf(stderr, "wgt train: %s, %.2fM parameters, %lld training sequences of %lld+1 tokens (%lld held out), "
                        "batch %lld, steps %lld..%lld, about %s on the device\n", src,
                wgt_train_model_numel(m) / 1e6, (long long)wgt_dataset_train_count(d), (long long)o.seq,
                (long long)ev_n, (long long)o.batch, (long long)start + 1, (long long)o.steps,
                fmt_size(need, need_s, sizeof need_s));
    if (o.batch > wgt_dataset_train_count(d))
        fprintf(stderr, "wgt train: note: --batch %lld is more than the %lld training sequences: each batch holds "
                        "some of them twice or more\n", (long long)o.batch, (long long)wgt_dataset_train_count(d));
    char ckpt[1100];
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint", o.out);
    double t0 = now(), last_eval = NAN, last_print = 0;
    for (int64_t s = start; s < o.steps; s++) {
        double loss;
        if (wgt_dataset_batch(d, s, o.batch, !o.no_shuffle, o.seed, ids) || wgt_trainer_step(t, ids, o.batch, o.seq, &loss)) {
            fail("step");
            goto done;
        }
        losses[s] = loss;
        if (wgt_trainer_last_skipped(t))
            fprintf(stderr, "%swgt train: step %lld: %s gradients overflowed: no update, loss scale now %g\n",
                    tty && !o.print_loss ? "\n" : "", (long long)s + 1, o.dtype, wgt_trainer_loss_scale(t));
        if (o.print_loss) {
            printf("step %lld loss %.6f\n", (long long)s + 1, loss);
            fflush(stdout);
        }
        if (!isfinite(loss)) {
            fprintf(stderr, "wgt train: step %lld: the loss is %g; stopping (try a lower --lr or --clip-norm)\n",
                    (long long)s + 1, loss);
            goto done;
        }
        int last = s + 1 == o.steps;
        if (has_eval && ((eval_every && (s + 1) % eval_every == 0) || last)) {
            if (eval_loss(t, ed, ev_first, ev_n, o.batch, o.seq, ids, &last_eval)) {
                fail("evaluation");
                goto done;
            }
            ev_step[n_ev] = s + 1, ev_loss[n_ev++] = last_eval;
            if (o.keep_best && last_eval < best_eval) {
                if (wgt_train_model_save(m, o.out, o.tokenizer)) {
                    fail(o.out);
                    goto done;
                }
                best_eval = last_eval, best_step = s + 1;
            }
            double el = now() - t0;
            write_log(&o, src, losses, s + 1, ev_step, ev_loss, n_ev, best_step, el,
                      (double)(s + 1 - start) * o.batch * o.seq / el);
        }
        if (o.save_every && (s + 1) % o.save_every == 0 && !last) {
            char *state = state_json(&o, losses, s + 1, ev_step, ev_loss, n_ev);
            wgt_status st = wgt_trainer_save(t, ckpt, o.tokenizer, state);
            free(state);
            if (st) {
                fail(ckpt);
                goto done;
            }
        }
        double el = now() - t0;
        if (!o.print_loss && (tty ? el - last_print > 0.2 || last : (s + 1) % (eval_every ? eval_every : 1) == 0 || last)) {
            wgt_memory_stats ms = {0};
            wgt_context_memory_stats(ctx, &ms);
            double tps = (double)(s + 1 - start) * o.batch * o.seq / el;
            char eta[32], ev[32] = "-", mem[32];
            fmt_time(el / (double)(s + 1 - start) * (double)(o.steps - s - 1), eta, sizeof eta);
            if (!isnan(last_eval)) snprintf(ev, sizeof ev, "%.4f", last_eval);
            fprintf(stderr, "%sstep %lld/%lld  loss %.4f  eval %s  %.0f tok/s  mem %s  ETA %s%s", tty ? "\r" : "",
                    (long long)s + 1, (long long)o.steps, loss, ev, tps,
                    fmt_size((double)ms.peak_in_use_bytes, mem, sizeof mem), eta, tty ? "   " : "\n");
            last_print = el;
        }
    }
    if (!o.print_loss && tty) fprintf(stderr, "\n");
    if (!best_step && wgt_train_model_save(m, o.out, o.tokenizer)) {
        fail(o.out);
        goto done;
    }
    double total_s = now() - t0;
    write_log(&o, src, losses, o.steps, ev_step, ev_loss, n_ev, best_step, total_s,
              (double)(o.steps - start) * o.batch * o.seq / total_s);
    char svg[1200], title[256];
    snprintf(svg, sizeof svg, "%s/loss_curve.svg", o.out);
    snprintf(title, sizeof title, "wgt train: %s, batch %lld x %lld, lr %g (%s)", o.optimizer, (long long)o.batch,
             (long long)o.seq, to.optim.lr, o.schedule);
    if (train_write_svg(svg, losses, o.steps, ev_step, ev_loss, n_ev, title)) fail(svg);
    if (!o.print_loss)
        fprintf(stderr, "wgt train: wrote %s (config.json, model.safetensors, loss_curve.svg); final loss %.4f%s%s, "
                        "%.1f s\n", o.out, losses[o.steps - 1], n_ev ? ", held-out " : "",
                n_ev ? (snprintf(title, sizeof title, "%.4f", ev_loss[n_ev - 1]), title) : "", now() - t0);
    if (best_step && !o.print_loss)
        fprintf(stderr, "wgt train: --keep-best: %s holds the weights of step %lld (held-out %.4f)\n", o.out,
                (long long)best_step, best_eval);
    rc = 0;
done:
    free(ids);
    free(losses), free(ev_loss), free(ev_step);
    wgt_trainer_free(t);
    wgt_dataset_free(d);
    wgt_dataset_free(ev);
    wgt_train_model_free(m);
    wgt_context_free(ctx);
    return rc;
}
