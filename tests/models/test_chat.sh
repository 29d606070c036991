#!/usr/bin/env bash
# wgt chat against the pieces it is made of: the reply to each turn must equal what wgt generate
# gives (greedy) for the conversation rendered by wgt tokenize --chat (the template renderer
# tested against Hugging Face's), and the second turn must reuse the cached first turn; with --json
# each reply is one JSON object (or its start), the first equal to wgt generate --json's.
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?}
model=$root/models/bible-llama.gguf
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
printf 'Who made the heavens?\nAnd what of the sea?\n' |
    "$wgt" chat -m "$model" --template chatml -n 12 --temp 0 >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
mapfile -t replies <"$tmp/out"
[ ${#replies[@]} = 2 ] || { echo "FAIL: want 2 replies, got ${#replies[@]}"; cat "$tmp/out"; exit 1; }
# turn 1
ids=$("$wgt" tokenize -t "$model" --chat --template chatml "Who made the heavens?" | tr ' ' ',')
want1=$("$wgt" generate -m "$model" --prompt-ids "$ids" -n 12 --temp 0 2>/dev/null)
[ "${replies[0]}" = "$want1" ] || { echo "FAIL turn 1: chat '${replies[0]}', generate '$want1'"; fail=1; }
# turn 2: the conversation so far, as a messages file
node -e 'const [u1, a1, u2] = process.argv.slice(1);
  console.log(JSON.stringify([{role: "user", content: u1}, {role: "assistant", content: a1},
                              {role: "user", content: u2}]))' \
    "Who made the heavens?" "${replies[0]}" "And what of the sea?" >"$tmp/conv.json"
ids=$("$wgt" tokenize -t "$model" --chat --template chatml --messages "$tmp/conv.json" | tr ' ' ',')
want2=$("$wgt" generate -m "$model" --prompt-ids "$ids" -n 12 --temp 0 2>/dev/null)
[ "${replies[1]}" = "$want2" ] || { echo "FAIL turn 2: chat '${replies[1]}', generate '$want2'"; fail=1; }
# (the second turn's figures line: the WebGPU library may print warnings before them)
cached=$(grep ' cached), ' "$tmp/err" | sed -n '2s/.*(\([0-9]*\) cached).*/\1/p')
[ -n "$cached" ] && [ "$cached" -gt 10 ] || { echo "FAIL: turn 2 reused $cached cached tokens"; cat "$tmp/err"; fail=1; }
# --json: each reply is what wgt generate --json gives for that conversation (greedy), one JSON
# object or, cut by -n, the start of one (Python's json module judges: json_check.py)
printf 'Give the tribes as JSON.\nAnd the prophets?\n' |
    "$wgt" chat -m "$model" --template chatml -n 40 --temp 0 --json >"$tmp/jout" 2>"$tmp/jerr" || { cat "$tmp/jerr"; exit 1; }
mapfile -t jreplies <"$tmp/jout"
ids=$("$wgt" tokenize -t "$model" --chat --template chatml "Give the tribes as JSON." | tr ' ' ',')
jwant=$("$wgt" generate -m "$model" --prompt-ids "$ids" -n 40 --temp 0 --json 2>"$tmp/jgen")
[ "${jreplies[0]}" = "$jwant" ] || { echo "FAIL --json turn 1: chat '${jreplies[0]}', generate '$jwant'"; fail=1; }
how=complete
grep -q "the object is not closed" "$tmp/jgen" && how=prefix
printf '%s' "${jreplies[0]}" >"$tmp/j1"
python3 "$root/tests/models/json_check.py" $how "$tmp/j1" || { echo "FAIL: --json turn 1 ($how)"; fail=1; }
printf '%s' "${jreplies[1]:-}" >"$tmp/j2"
[ -n "${jreplies[1]:-}" ] && python3 "$root/tests/models/json_check.py" prefix "$tmp/j2" ||
    { echo "FAIL: --json turn 2: '${jreplies[1]:-}'"; fail=1; }
# errors are statuses
if "$wgt" chat -m "$model" --template @/nonexistent </dev/null 2>/dev/null; then echo "FAIL: missing template file accepted"; fail=1; fi
[ $fail = 0 ] && echo "chat: ok (turn 2 reused $cached cached tokens)"
exit $fail
