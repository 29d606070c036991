#!/usr/bin/env bash
# Strict option parsing (issue 19): every bad value of every numeric or choice option of the CLI is
# refused with exit 2 and a message naming the option and what it takes, before any model or
# device is touched (so these run in a second, without a GPU). Each of these ran silently before
# tools/args.c: atof/atoi read "abc" as 0, "-1" and "nan" as given, "4294967297" wrapped to 1.
# Also the llama.cpp spellings are accepted where the meaning is the same (checked by --help and
# by a bad value reaching the right option's range check).
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?}
model=$root/models/bible-llama.gguf
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0 n=0

# expect_refusal "pattern the message must contain" command args...
expect_refusal() {
    local want=$1; shift
    n=$((n + 1))
    timeout 30 "$wgt" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc != 2 ]; then
        echo "FAIL: wgt $* exited $rc (want 2)"; head -3 "$tmp/err"; fail=1
    elif ! grep -qF -- "$want" "$tmp/err"; then
        echo "FAIL: wgt $*: the message lacks '$want':"; head -3 "$tmp/err"; fail=1
    fi
}

g=(generate -m "$model" -p hi)
expect_refusal "--temp 'abc' is not a number: give a number from 0 to 100" "${g[@]}" --temp abc
expect_refusal "--temp '-1' is out of range" "${g[@]}" --temp -1
expect_refusal "--temp 'nan' is not a number" "${g[@]}" --temp nan
expect_refusal "--frequency-penalty '2.5' is out of range" "${g[@]}" --frequency-penalty 2.5
expect_refusal "--presence-penalty 'x' is not a number" "${g[@]}" --presence-penalty x
expect_refusal "--temp 'inf' is not a number" "${g[@]}" --temp inf
expect_refusal "--temp '0.5x' is not a number" "${g[@]}" --temp 0.5x
expect_refusal "--temp ' 1' is not a number" "${g[@]}" --temp " 1"
expect_refusal "-n 'abc' is not a whole number" "${g[@]}" -n abc
expect_refusal "-n '-1' is out of range: give a whole number from 0 to 2147483647" "${g[@]}" -n -1
expect_refusal "-n '12abc' is not a whole number" "${g[@]}" -n 12abc
expect_refusal "--n-predict '99999999999' is out of range" "${g[@]}" --n-predict 99999999999
expect_refusal "-n needs a value" "${g[@]}" -n
expect_refusal "--top-p '2' is out of range: give a number from 0 to 1" "${g[@]}" --top-p 2
expect_refusal "--top-k '-3' is out of range" "${g[@]}" --top-k -3
expect_refusal "--top-k '1.5' is not a whole number" "${g[@]}" --top-k 1.5
expect_refusal "--min-p '1.5' is out of range" "${g[@]}" --min-p 1.5
expect_refusal "--repeat-penalty '0' is out of range: give a number greater than 0" "${g[@]}" --repeat-penalty 0
expect_refusal "--repeat-penalty '-2' is out of range" "${g[@]}" --repeat-penalty -2
expect_refusal "--seed '-1' is not a whole number" "${g[@]}" --seed -1
expect_refusal "-s '18446744073709551616' is out of range" "${g[@]}" -s 18446744073709551616
expect_refusal "-c '-5' is out of range" "${g[@]}" -c -5
expect_refusal "--ctx-size 'x' is not a whole number" "${g[@]}" --ctx-size x
expect_refusal "--ctx '99999999' is out of range" "${g[@]}" --ctx 99999999
expect_refusal "unknown option '--bogus'" "${g[@]}" --bogus
expect_refusal "--prompt-ids: id '4294967297' is out of range" generate -m "$model" --prompt-ids 4294967297
expect_refusal "--prompt-ids: id '-1' is out of range" generate -m "$model" --prompt-ids 1,-1
expect_refusal "--prompt-ids: id 'x' is not a whole number" generate -m "$model" --prompt-ids 1,x,3
expect_refusal "--prompt-ids wants comma-separated ids" generate -m "$model" --prompt-ids ,,
expect_refusal "one of -p PROMPT, -f FILE, --prompt-ids IDS" generate -m "$model" -p a --prompt-ids 1
expect_refusal "-f $tmp: not a regular file" generate -m "$model" -f "$tmp"
expect_refusal "-f $tmp/none: no such file" generate -m "$model" -f "$tmp/none"

c=(chat -m "$model")
expect_refusal "--temp 'abc' is not a number" "${c[@]}" --temp abc
expect_refusal "-n '0' is out of range: give a whole number from 1 to 2147483647" "${c[@]}" -n 0
expect_refusal "--top-p '-0.1' is out of range" "${c[@]}" --top-p -0.1
expect_refusal "--repeat-penalty '0' is out of range" "${c[@]}" --repeat-penalty 0
expect_refusal "-c 'abc' is not a whole number" "${c[@]}" -c abc
expect_refusal "--template 'typo' is not a template" "${c[@]}" --template typo
expect_refusal "--template 'typo' is not a template" tokenize -t "$model" --chat --template typo hi

expect_refusal "-p '0' is out of range: give a whole number from 1 to 4096" bench -m "$model" -p 0
expect_refusal "-n 'abc' is not a whole number" bench -m "$model" -n abc
expect_refusal "--n-gen '5000' is out of range" bench -m "$model" --n-gen 5000
expect_refusal "--max-bytes '-1' is not a whole number" bench --device --max-bytes -1
expect_refusal "unknown option '--bogus'" bench --bogus
expect_refusal "--dtype q8: use f32, bf16 or f16" bench --train -m "$root/models/bible-llama/config.json" --dtype q8
expect_refusal "--batch '0' is out of range" bench --train -m "$root/models/bible-llama/config.json" --batch 0
expect_refusal "--train needs -m" bench --train
expect_refusal "--selfcheck-floats '99999999999999' is out of range" info --selfcheck-floats 99999999999999
expect_refusal "--selfcheck-floats 'abc' is not a whole number" info --selfcheck-floats abc
expect_refusal "--selfcheck-floats '0' is out of range" info --selfcheck-floats 0
expect_refusal "--tol-scale 'nan' is not a number" onnx-test --tol-scale nan "$tmp"
expect_refusal "--tol-scale '0' is out of range" onnx-test --tol-scale 0 "$tmp"

# tokenize / detokenize read only the tokenizer (no device)
n=$((n + 1))
if "$wgt" tokenize -t "$model" --file "$tmp" >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: tokenize --file DIR succeeded: $(cat "$tmp/out")"; fail=1
elif ! grep -q "cannot read $tmp: Is a directory" "$tmp/err"; then
    echo "FAIL: tokenize --file DIR: $(cat "$tmp/err")"; fail=1
fi
for bad in '[1e20]' '[-1]' '[2147483648]' '[1.5]' '["7"]'; do
    printf '%s\n' "$bad" >"$tmp/ids.jsonl"
    expect_refusal "is not a token id (a whole number from 0 to 2147483647)" detokenize -t "$model" --jsonl "$tmp/ids.jsonl"
done
# the good values still work (the reference: the same ids as arguments)
printf '[1, 2147483647]\n' >"$tmp/ids.jsonl"
"$wgt" detokenize -t "$model" --jsonl "$tmp/ids.jsonl" >/dev/null 2>&1 && { echo "FAIL: id 2147483647 outside a 4096 vocabulary was accepted"; fail=1; }
printf '[450, 3186]\n' >"$tmp/ids.jsonl"
want=$("$wgt" detokenize -t "$model" 450 3186 | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.stringify(s.replace(/\n$/,""))))')
got=$("$wgt" detokenize -t "$model" --jsonl "$tmp/ids.jsonl")
[ "$got" = "$want" ] || { echo "FAIL: detokenize --jsonl [450, 3186] gave $got, the arguments $want"; fail=1; }

# a bos id outside the vocabulary (the GGUF's tokenizer.ggml.bos_token_id, a u32, set to 99999)
# is an error for the tokenizer and for the model, not a token silently left out
node -e 'const fs = require("fs"); const b = fs.readFileSync(process.argv[1]);
  const k = b.indexOf("tokenizer.ggml.bos_token_id"); if (k < 0) process.exit(1);
  const at = k + "tokenizer.ggml.bos_token_id".length; if (b.readUInt32LE(at) !== 4) process.exit(1);
  b.writeUInt32LE(99999, at + 4); fs.writeFileSync(process.argv[2], b);' "$model" "$tmp/bad-bos.gguf" ||
    { echo "FAIL: could not find the u32 tokenizer.ggml.bos_token_id in $model"; fail=1; }
n=$((n + 2))
"$wgt" tokenize -t "$tmp/bad-bos.gguf" hi >/dev/null 2>"$tmp/err" && { echo "FAIL: tokenize with bos 99999 succeeded"; fail=1; }
grep -q "the bos token id 99999 is outside the vocabulary of 4096 tokens" "$tmp/err" || { echo "FAIL: bos 99999: $(cat "$tmp/err")"; fail=1; }
"$wgt" generate -m "$tmp/bad-bos.gguf" --prompt-ids 1 -n 1 >/dev/null 2>"$tmp/err" && { echo "FAIL: generate with bos 99999 succeeded"; fail=1; }
grep -q "bos_token_id 99999 is outside the vocabulary of 4096 tokens" "$tmp/err" || { echo "FAIL: generate, bos 99999: $(cat "$tmp/err")"; fail=1; }

# llama.cpp's names are documented where wgt has the same meaning; today's spellings stay
for flag in "-c, --ctx-size" "-f, --file" "-s, --seed" "-n, --n-predict" "-m, --model" "-p, --prompt" "(--ctx too)"; do
    "$wgt" generate --help | grep -qF -- "$flag" || { echo "FAIL: generate --help lacks '$flag'"; fail=1; }
done
# every environment variable the code reads is listed by wgt info --help
vars=$(grep -rhoE 'getenv\("[A-Z_]+"\)' "$root/src" "$root/tools" | sed 's/getenv("\(.*\)")/\1/' | sort -u)
vars="$vars WGT_COMPAT WGT_FORCE_FALLBACK_ADAPTER WGT_DEBUG" # read through env_flag("...")
"$wgt" info --help >"$tmp/help"
for v in $vars; do grep -q "^  $v=" "$tmp/help" || { echo "FAIL: wgt info --help does not list $v"; fail=1; }; done
grep -q "WGT_MAX_BATCH=n .*\[1024\]" "$tmp/help" || { echo "FAIL: WGT_MAX_BATCH's default is 1024 in the code"; fail=1; }

[ $fail = 0 ] && echo "cli options: ok ($n refusals and checks)"
exit $fail
