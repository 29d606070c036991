#!/usr/bin/env bash
# The page's interactive paths in one headless Chromium session (tests/web/session.mjs), each
# against the native CLI on the same model:
#  - the cache-storage reload: the first visit fetches the model, a reload of the same URL reads it
#    from the browser's cache storage (no request for it) and generates the same ids;
#  - streaming: the Generate button's text grows token by token before the run ends, and the final
#    text equals `wgt generate -p` (greedy);
#  - chat mode: two turns of one conversation (the KV cache kept) equal `wgt chat`'s replies
#    (the default model has no chat template: both use chatml);
#  - the file picker: the model chosen from disk loads, and the text prompt gives the same text;
#  - drag and drop: a File of the model's bytes dropped on the page loads, and gives the same text.
. "$(dirname "$0")/web_common.sh"
model=models/bible-llama.gguf
n=8
text="And God said"
m1="Who made the light?"
m2="And the waters?"
# The native CLI's answers, made one run after another in the background while the browser runs
native() {
  "$bin" generate -m "$model" --prompt-ids 1 -n 2 --temp 0 --print-ids > "$tmp/ids" 2>/dev/null || echo fail > "$tmp/ids.fail"
  "$bin" generate -m "$model" -p "$text" -n $n --temp 0 > "$tmp/text" 2>/dev/null || echo fail > "$tmp/text.fail"
  printf '%s\n%s\n' "$m1" "$m2" | "$bin" chat -m "$model" -n $n --temp 0 > "$tmp/chat" 2>/dev/null || echo fail > "$tmp/chat.fail"
}
native &
natives=$!
r=$(node tests/web/session.mjs --root "$web" --model "$model" --text "$text" --chat "$m1" --chat "$m2" --n $n --timeout 400)
wait $natives
[ -e "$tmp/ids.fail" ] && fail "the native CLI failed on --prompt-ids 1"
[ -e "$tmp/text.fail" ] && fail "the native CLI failed on -p"
[ -e "$tmp/chat.fail" ] && fail "wgt chat failed"
want_ids=$(cat "$tmp/ids") want_text=$(cat "$tmp/text") want_chat=$(cat "$tmp/chat")
sub() { node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")); const v = process.argv.slice(1).reduce((o, k) => (o == null ? o : o[k]), r); process.stdout.write(v == null ? "" : typeof v === "string" ? v : JSON.stringify(v));' "$@"; }
norm() { tr -s ' \n' ' ' <<<"$1" | sed 's/^ *//; s/ *$//'; }
[ -z "$(sub error <<<"$r")" ] || echo "  driver: $(sub error <<<"$r")"
echo "     seconds since the start, at the end of each phase: $(sub seconds <<<"$r")"

check "first visit: the page is done" "$(sub load title <<<"$r")" done
[ "$(sub load requests <<<"$r")" -ge 1 ] 2>/dev/null && echo "ok   first visit: the model was fetched" ||
  { echo "FAIL first visit: $(sub load requests <<<"$r") requests for the model, $(sub load error <<<"$r")"; failures=$((failures + 1)); }
check "first visit: greedy ids equal the CLI's" "$(norm "$(sub load ids <<<"$r")")" "$(norm "$want_ids")"
check "reload: the page is done" "$(sub reload title <<<"$r")" done
check "reload: no request for the model" "$(sub reload requests <<<"$r")" 0
case "$(sub reload statuses <<<"$r")" in *"from the browser's cache"*) echo "ok   reload: the page says it read the model from the cache" ;;
  *) echo "FAIL reload: the page's statuses do not mention the cache: $(sub reload statuses <<<"$r")"; failures=$((failures + 1)) ;; esac
check "reload: the same ids" "$(norm "$(sub reload ids <<<"$r")")" "$(norm "$want_ids")"

check "streaming: the final text equals wgt generate -p's" "$(norm "$(sub stream final <<<"$r")")" "$(norm "$want_text")"
# the texts the output showed before its final one, longer than the prompt: tokens arriving
partial=$(sub stream <<<"$r" | node -e '
  const s = JSON.parse(require("fs").readFileSync(0, "utf8")), p = process.argv[1];
  const seen = new Set(s.changes.filter((c) => c.text !== s.final && c.text.length > p.length && c.t < s.t_end).map((c) => c.text));
  process.stdout.write(String(seen.size));' "$text")
[ "${partial:-0}" -ge 2 ] && echo "ok   streaming: $partial partial texts shown before the end" ||
  { echo "FAIL streaming: ${partial:-0} partial texts before the end (want 2 or more)"; failures=$((failures + 1)); }

[ -z "$(sub chat error <<<"$r")" ] || echo "  chat: $(sub chat error <<<"$r")"
got_chat=$(sub chat replies <<<"$r" | node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0, "utf8") || "[]").join("\n"))')
check "chat: two turns equal wgt chat's replies" "$(norm "$got_chat")" "$(norm "$want_chat")"

[ -z "$(sub file error <<<"$r")" ] || echo "  file: $(sub file error <<<"$r")"
case "$(sub file statuses <<<"$r")" in *"reading bible-llama.gguf"*"bible-llama.gguf loaded"*) echo "ok   file picker: the page read the chosen file and loaded it" ;;
  *) echo "FAIL file picker: the page's statuses: $(sub file statuses <<<"$r")"; failures=$((failures + 1)) ;; esac
check "file picker: the text equals wgt generate -p's" "$(norm "$(sub file final <<<"$r")")" "$(norm "$want_text")"

[ -z "$(sub drop error <<<"$r")" ] || echo "  drop: $(sub drop error <<<"$r")"
check "drag and drop: dragging over the page marks the drop zone" "$(sub drop over <<<"$r")" true
case "$(sub drop statuses <<<"$r")" in *"reading dropped.gguf"*"dropped.gguf loaded"*) echo "ok   drag and drop: the page read the dropped file and loaded it" ;;
  *) echo "FAIL drag and drop: the page's statuses: $(sub drop statuses <<<"$r")"; failures=$((failures + 1)) ;; esac
check "drag and drop: the text equals wgt generate -p's" "$(norm "$(sub drop final <<<"$r")")" "$(norm "$want_text")"

[ $failures = 0 ] || { sub console <<<"$r" | head -c 2000; echo; fail "$failures check(s) failed"; }
echo "the page's session checks passed"
