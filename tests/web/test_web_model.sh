#!/usr/bin/env bash
# The browser build (make web) in headless Chromium on its software adapter (SwiftShader):
#  - the default model's greedy ids for several prompts (ids, and text through the tokenizer in the
#    module) equal the native CLI's;
#  - a GGUF loaded by URL works (the default model is fetched by URL), a truncated one and a file
#    that is not a model give the page's error;
#  - a browser without WebGPU and an adapter whose largest buffer is smaller than the model's
#    largest tensor (both simulated by run.mjs) give the page's error, saying so.
. "$(dirname "$0")/web_common.sh"
model=models/bible-llama.gguf
# Eight tokens per prompt: the first from the prefill, seven from decode steps. SwiftShader decodes
# at about 2 tok/s here (the kernels' barrier-free variants, wgt_gpu_avoid_barriers); the page's
# time goes mostly to compiling kernels (the first prompt of each length class).
n=${WGT_WEB_TOKENS:-8}
# Prompts as ids and as text (the text goes through the tokenizer inside the module), all in one
# page load so the kernels compile once (SwiftShader compiles and runs them slowly: see README).
id_prompts="1 1,450,600,333 1,13,797,278,3763"
text_prompt="In the beginning God created"
url="index.html?model=$model&n=$n&temp=0"
for ids in $id_prompts; do url="$url&prompt_ids=$ids"; done
url="$url&prompt=$(node -e 'process.stdout.write(encodeURIComponent(process.argv[1]))' "$text_prompt")"
# Sampled: the second id prompt with every sampling setting of `wgt generate` (want.4), settings
# whose ids differ from the greedy ones (checked below, so the page cannot pass by ignoring them)
sample_ids=1,450,600,333
sample_url="temp=0.9&top_k=40&top_p=0.95&min_p=0.05&repeat_penalty=1.3&seed=42"
sample_cli="--temp 0.9 --top-k 40 --top-p 0.95 --min-p 0.05 --repeat-penalty 1.3 -s 42"
# The native CLI's ids (want.0 .. want.3: the id prompts, then the text), made one run after another
# in the background while the browser runs
native_ids() {
  local k=0
  for ids in $id_prompts; do
    "$bin" generate -m "$model" --prompt-ids "$ids" -n $n --temp 0 --print-ids > "$tmp/want.$k" 2>/dev/null ||
      echo "the native CLI failed on --prompt-ids $ids" > "$tmp/want.$k"
    k=$((k + 1))
  done
  "$bin" generate -m "$model" -p "$text_prompt" -n $n --temp 0 --print-ids > "$tmp/want.$k" 2>/dev/null ||
    echo "the native CLI failed on -p" > "$tmp/want.$k"
  # shellcheck disable=SC2086
  "$bin" generate -m "$model" --prompt-ids "$sample_ids" -n $n $sample_cli --print-ids > "$tmp/want.4" 2>/dev/null ||
    echo "the native CLI failed on $sample_cli" > "$tmp/want.4"
}
native_ids &
natives=$!
# A truncated GGUF and a file that is not a model, served by the driver under their own names
head -c 300000 "$model" > "$tmp/corrupt.gguf"
printf 'this is a text file, not a model\n' > "$tmp/notes.gguf"
# One browser launch, six pages (each in a fresh context): the model, the truncated GGUF, the
# non-model, a browser without WebGPU, an adapter too small for the model (run.mjs simulates both),
# the model sampled
mapfile -t rs < <(page --timeout 840 --page "$url" --bytes "corrupt.gguf=$tmp/corrupt.gguf" --bytes "notes.gguf=$tmp/notes.gguf" \
  --page "index.html?model=corrupt.gguf&prompt_ids=1&n=2" --page "index.html?model=notes.gguf&prompt_ids=1&n=2" \
  --page "nogpu:index.html?model=$model&prompt_ids=1&n=2" --page "smallgpu:index.html?model=$model&prompt_ids=1&n=2" \
  --page "index.html?model=$model&prompt_ids=$sample_ids&n=$n&$sample_url")
wait $natives
want=()
for f in 0 1 2 3 4; do want+=("$(cat "$tmp/want.$f" 2>/dev/null)"); done

r=${rs[0]:-'{}'}
[ "$(field title <<<"$r")" = done ] || echo "  page: $(field title <<<"$r"): $(field error <<<"$r") $(field timeout <<<"$r")"
mapfile -t got < <(field ids <<<"$r")
i=0
for what in $id_prompts "the text '$text_prompt' (tokenized in the module)"; do
  norm() { tr -s ' ' <<<"$1" | sed 's/^ *//; s/ *$//'; }
  check "greedy ids after $what" "$(norm "${got[$i]:-}")" "$(norm "${want[$i]}")"
  i=$((i + 1))
done
echo "     page: $(field speed <<<"$r")"

r=${rs[1]:-'{}'}
check "a truncated GGUF: the page says error" "$(field title <<<"$r")" error
err=$(field error <<<"$r")
case "$err" in *truncated*|*past\ the\ end*|*offset*) echo "ok   its message: ${err:0:160}" ;;
  *) echo "FAIL the truncated GGUF's message does not say what is wrong: '$err'"; failures=$((failures + 1)) ;; esac

r=${rs[2]:-'{}'}
check "a file that is not a model: the page says error" "$(field title <<<"$r")" error
err=$(field error <<<"$r")
case "$err" in *"not a model"*) echo "ok   its message: ${err:0:160}" ;;
  *) echo "FAIL the non-model's message: '$err'"; failures=$((failures + 1)) ;; esac

r=${rs[3]:-'{}'}
check "a browser without WebGPU: the page says error" "$(field title <<<"$r")" error
err=$(field error <<<"$r")
case "$err" in *"no WebGPU"*) echo "ok   its message: ${err:0:160}" ;;
  *) echo "FAIL the no-WebGPU message: '$err'"; failures=$((failures + 1)) ;; esac

r=${rs[4]:-'{}'}
check "an adapter too small for the model: the page says error" "$(field title <<<"$r")" error
err=$(field error <<<"$r")
case "$err" in *"more than this adapter's largest buffer"*) echo "ok   its message: ${err:0:160}" ;;
  *) echo "FAIL the too-large message: '$err'"; failures=$((failures + 1)) ;; esac

r=${rs[5]:-'{}'}
[ "$(field title <<<"$r")" = done ] || echo "  sampled page: $(field title <<<"$r"): $(field error <<<"$r") $(field timeout <<<"$r")"
echo "     sampled page: $(field speed <<<"$r")"
check "sampled ids after $sample_ids ($sample_url) equal wgt generate $sample_cli" "$(norm "$(field ids <<<"$r")")" "$(norm "${want[4]}")"
if [ "$(norm "${want[4]}")" = "$(norm "${want[1]}")" ]; then
  echo "FAIL the sampling settings give the greedy ids: pick settings that sample"; failures=$((failures + 1))
fi

[ $failures = 0 ] || fail "$failures check(s) failed"
echo "all browser checks passed"
