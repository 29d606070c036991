#!/usr/bin/env bash
# What generate, chat and bench do at their limits (issue 19, "Silently wrong"), on the default
# model through the default adapter. Each case failed before: -n 0 printed "inf tok/s"; a full
# context was an error (exit 1, no figures); chat refused the GGUF for want of a template and
# ended the session when the context filled; a corrupt tokenizer read as "no tokenizer"; random
# weights ran without a word; bench printed "0 GB/s"; --selfcheck-floats past a binding passed on
# a smaller count. References: generate's own greedy ids without the limit (a full context must
# give the same first tokens as a long one).
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?}
model=$root/models/bible-llama.gguf
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
ids=1,450,3186,100 # 4 prompt tokens

# -n 0: the prompt, no rate of nothing
"$wgt" generate -m "$model" --prompt-ids $ids -n 0 --print-ids >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: -n 0 exited $?"; fail=1; }
grep -qi "inf\|nan" "$tmp/err" && { echo "FAIL: -n 0 printed: $(cat "$tmp/err")"; fail=1; }
grep -q "decode: 0 tokens, - tok/s" "$tmp/err" || { echo "FAIL: -n 0: $(cat "$tmp/err")"; fail=1; }

# a context of 12 holds the 4 prompt tokens and 9 generated ids (the last is sampled, not fed)
"$wgt" generate -m "$model" --prompt-ids $ids -n 100000 -c 12 --ignore-eos --print-ids >"$tmp/out" 2>"$tmp/err"
rc=$?
got=$(cat "$tmp/out")
want=$("$wgt" generate -m "$model" --prompt-ids $ids -n 9 --ignore-eos --print-ids 2>/dev/null)
[ $rc = 0 ] || { echo "FAIL: a full context exited $rc: $(cat "$tmp/err")"; fail=1; }
[ "$got" = "$want" ] || { echo "FAIL: full context gave '$got', the first 9 of a long run are '$want'"; fail=1; }
grep -q "stopped at the end of the context (12 tokens): 4 prompt + 9 generated" "$tmp/err" &&
    grep -q "^prefill: 4 tokens, .* | decode: 9 tokens" "$tmp/err" || { echo "FAIL: full context note/figures: $(cat "$tmp/err")"; fail=1; }
# a prompt longer than the context is an error naming both
"$wgt" generate -m "$model" --prompt-ids $ids -c 3 >/dev/null 2>"$tmp/err" && { echo "FAIL: 4-token prompt in a context of 3 ran"; fail=1; }
grep -q "the prompt has 4 tokens and the context holds 3" "$tmp/err" || { echo "FAIL: long prompt: $(cat "$tmp/err")"; fail=1; }

# -f FILE is the same prompt as -p
printf 'In the beginning' >"$tmp/prompt.txt"
a=$("$wgt" generate -m "$model" -f "$tmp/prompt.txt" -n 4 --print-ids 2>/dev/null)
b=$("$wgt" generate -m "$model" -p 'In the beginning' -n 4 --print-ids 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: -f gave '$a', -p '$b'"; fail=1; }

# a corrupt tokenizer is reported with its parse error; ids still work
mkdir "$tmp/dir" && cp "$root/models/bible-llama/"* "$tmp/dir/"
head -c 100 /dev/urandom >"$tmp/dir/tokenizer.model"
"$wgt" generate -m "$tmp/dir" -p hi -n 1 >/dev/null 2>"$tmp/err" && { echo "FAIL: corrupt tokenizer: exit 0"; fail=1; }
grep -q "the model's tokenizer could not be read: .*tokenizer.model" "$tmp/err" || { echo "FAIL: corrupt tokenizer: $(cat "$tmp/err")"; fail=1; }
"$wgt" generate -m "$tmp/dir" --prompt-ids 1 -n 1 --print-ids >/dev/null 2>&1 || { echo "FAIL: corrupt tokenizer stops --prompt-ids"; fail=1; }

# a configuration alone runs random weights, and says so
"$wgt" generate -m "$root/models/bible-llama/config.json" --prompt-ids 1 -n 1 >/dev/null 2>"$tmp/err" || { echo "FAIL: config.json run: $(cat "$tmp/err")"; fail=1; }
grep -q "warning: .*config.json is a configuration alone: the weights are random" "$tmp/err" || { echo "FAIL: no random-weights warning"; fail=1; }

# chat: the GGUF has no template: chatml with a note (what wgt tokenize --chat --template chatml renders)
printf 'Who made the heavens?\n' | "$wgt" chat -m "$model" -n 6 --temp 0 >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: chat without a template: $(cat "$tmp/err")"; fail=1; }
grep -q "has no chat template: using chatml" "$tmp/err" || { echo "FAIL: no template note: $(cat "$tmp/err")"; fail=1; }
cids=$("$wgt" tokenize -t "$model" --chat --template chatml "Who made the heavens?" | tr ' ' ',')
want=$("$wgt" generate -m "$model" --prompt-ids "$cids" -n 6 --temp 0 2>/dev/null)
[ "$(head -1 "$tmp/out")" = "$want" ] || { echo "FAIL: chat's reply '$(head -1 "$tmp/out")', generate '$want'"; fail=1; }
# chat past the context: 6 turns of about 60 tokens each (chatml's markers are plain text to this
# tokenizer) in a context of 160 keep going, dropping the oldest
printf 'Who made the heavens and the earth?\nAnd what of the sea and the land?\nTell me of Moses.\nAnd of Noah?\nWho was David?\nWho was Solomon?\n' |
    "$wgt" chat -m "$model" -c 160 -n 8 --temp 0 --system "You speak of the Bible." >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] && [ "$(wc -l <"$tmp/out")" = 6 ] || { echo "FAIL: chat past the context: exit $rc, $(wc -l <"$tmp/out") replies"; cat "$tmp/err"; fail=1; }
grep -q "outgrew the context of 160 tokens: dropped the oldest [0-9]* message(s), kept the system message" "$tmp/err" ||
    { echo "FAIL: no context-shift note"; cat "$tmp/err"; fail=1; }
# a message alone longer than the context is refused and the session goes on
{ printf 'word %.0s' $(seq 80); printf '\nAnd of Noah?\n'; } | "$wgt" chat -m "$model" -c 100 -n 4 --temp 0 >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 0 ] && [ "$(wc -l <"$tmp/out")" = 1 ] && grep -q "this message makes a prompt of .* it is dropped" "$tmp/err" ||
    { echo "FAIL: an overlong message: exit $rc"; cat "$tmp/err"; fail=1; }

# bench on a CPU adapter: decode GB/s with significant digits
"$wgt" bench -m "$root/models/bible-llama/config.json" -p 4 -n 4 >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: bench: $(cat "$tmp/err")"; fail=1; }
grep -q "tok/s, .* ms/token, [0-9.]* GB/s of weights read" "$tmp/out" && ! grep -q " 0 GB/s" "$tmp/out" || { echo "FAIL: bench: $(cat "$tmp/out")"; fail=1; }
# the timed prefill feeds the whole prompt (the warm-up's keys are not reused)
grep -q "^prefill: 4 tokens in" "$tmp/out" || { echo "FAIL: bench's timed prefill: $(cat "$tmp/out")"; fail=1; }
"$wgt" bench -m "$root/models/bible-llama/config.json" -p 400 -n 200 >/dev/null 2>"$tmp/err" && { echo "FAIL: bench past the context ran"; fail=1; }
grep -q "do not fit the context of 512 tokens" "$tmp/err" || { echo "FAIL: bench past the context: $(cat "$tmp/err")"; fail=1; }

# info: a count past one storage binding is refused, not checked on fewer floats
"$wgt" info --selfcheck-floats 1000000000000 >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "is more than one storage binding of this adapter holds: give at most" "$tmp/err" ||
    { echo "FAIL: --selfcheck-floats 1e12: exit $rc $(cat "$tmp/err")"; fail=1; }
grep -q PASS "$tmp/out" && { echo "FAIL: --selfcheck-floats 1e12 claimed a pass"; fail=1; }

[ $fail = 0 ] && echo "generate limits: ok"
exit $fail
