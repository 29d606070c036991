#!/usr/bin/env bash
# `wgt convert` never destroys a file (issue 19): an output that is one of the checkpoint's files
# (weights, tokenizer, config.json, through a link too) is refused; an existing output is replaced
# only with --force; a device node or directory given as the output is refused and left alone;
# SIGINT / SIGTERM / SIGKILL in the middle of a conversion leave the previous output intact (INT
# and TERM leave no temporary file either). After every case the checksum of every input file is
# compared with the one taken before. Failed on the old code (fopen(out, "wb") on the mapped input:
# SIGBUS and a 0-byte model.safetensors; remove() on a device node).
set -u
: "${WGT_BIN:?}" "${WGT_BUILD:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wgt-convert-safety.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

"$WGT_BUILD/tests/test_convert" --make "$tmp/hf" >/dev/null 2>&1 || { echo "FAIL: test_convert --make"; exit 1; }
hf=$tmp/hf/llama
[ -f "$hf/model.safetensors" ] && [ -f "$hf/config.json" ] || { echo "FAIL: fixture $hf incomplete"; exit 1; }
# a SentencePiece file when the fixture has one (test_convert --make copies tests/fixtures/text/llama2-tokenizer.model
# into it), else tokenizer.json's dir
tokdir=$hf; tokfile=tokenizer.model
[ -f "$hf/tokenizer.model" ] || { tokdir=$tmp/hf/qwen3; tokfile=tokenizer.json; }

sums() { find "$tmp/hf" -type f -print0 | sort -z | xargs -0 sha256sum; }
sums >"$tmp/sums.before"
inputs_intact() { # case label
    sums >"$tmp/sums.after"
    if cmp -s "$tmp/sums.before" "$tmp/sums.after"; then ok "$1: every input file unchanged"
    else fail "$1: input files changed:"; diff "$tmp/sums.before" "$tmp/sums.after" | head; fi
}
# refused CASE EXPECT-IN-MESSAGE convert-args...: exit 1..127, a message naming the problem
refused() {
    local label=$1 want=$2; shift 2
    "$WGT_BIN" convert "$@" >"$tmp/out.log" 2>&1
    local rc=$?
    if [ $rc -ge 1 ] && [ $rc -le 127 ] && grep -qi -- "$want" "$tmp/out.log"; then ok "$label: refused ($rc): $(tail -1 "$tmp/out.log")"
    else fail "$label: exit $rc, expected a refusal naming '$want':"; sed 's/^/    /' "$tmp/out.log" | tail -5; fi
    inputs_intact "$label"
}

refused "output = the weights" "input file" "$hf" "$hf/model.safetensors" --force
refused "output = the weights, input the file" "input file" "$hf/model.safetensors" "$hf/model.safetensors" --force
refused "output = $tokfile" "input file" "$tokdir" "$tokdir/$tokfile" --force
refused "output = config.json" "input file" "$hf" "$hf/config.json" --force
refused "output = config.json, without --force" "input file" "$hf" "$hf/config.json"
ln -s "$hf/model.safetensors" "$tmp/link.gguf"
refused "output = a symbolic link to the weights" "input file" "$hf" "$tmp/link.gguf" --force
ln "$hf/config.json" "$tmp/hard.gguf"
refused "output = a hard link to config.json" "input file" "$hf" "$tmp/hard.gguf" --force
rm -f "$tmp/hard.gguf"
refused "output = a directory" "directory" "$hf" "$tmp" --force
refused "output in a missing directory" "no/such/dir" "$hf" "$tmp/no/such/dir/x.gguf"

# a character device node (/dev/null's numbers) given as the output: refused and still there
if mknod "$tmp/dev" c 1 3 2>/dev/null; then
    refused "output = a character device" "not a regular file" "$hf" "$tmp/dev" --force
    [ -c "$tmp/dev" ] && ok "the device node is still there" || fail "the device node was removed"
else
    echo "note: mknod needs root here: a fifo stands in for the device node"
    mkfifo "$tmp/dev"
    refused "output = a fifo" "not a regular file" "$hf" "$tmp/dev" --force
    [ -p "$tmp/dev" ] && ok "the fifo is still there" || fail "the fifo was removed"
fi
rm -f "$tmp/dev"

# an existing output: refused without --force (the message says so), replaced with it
echo "previous output" >"$tmp/out.gguf"
refused "existing output without --force" "--force" "$hf" "$tmp/out.gguf"
[ "$(cat "$tmp/out.gguf")" = "previous output" ] && ok "existing output unchanged" || fail "existing output changed without --force"
if "$WGT_BIN" convert "$hf" "$tmp/out.gguf" --force >"$tmp/out.log" 2>&1 && [ "$(head -c 4 "$tmp/out.gguf")" = GGUF ]; then
    ok "existing output replaced with --force"
else fail "--force did not replace the output:"; tail -3 "$tmp/out.log"; fi
inputs_intact "--force"
"$WGT_BIN" convert "$hf" "$tmp/new.gguf" >"$tmp/out.log" 2>&1 && [ "$(head -c 4 "$tmp/new.gguf")" = GGUF ] &&
    ok "a new output is written" || fail "a new output was not written"
stray=$(find "$tmp" -name '.*.wgt-*' | wc -l)
[ "$stray" = 0 ] && ok "no temporary file left" || fail "$stray temporary files left"

# Signals in the middle of a conversion. A timer cannot place a signal reliably (a fast machine
# finished the whole conversion before it: CI of 2026-12-01), so an LD_PRELOAD shim stops the
# process when it fsyncs its temporary file (every byte written, the final name not yet replaced);
# the signal is sent to the stopped process, which is then continued. The checkpoint is a sparse
# 32 MB f32 embedding [8192, 1024], converted to q4_k.
shim=$tmp/stop_before_commit.so
${CC:-cc} -shared -fPIC -O1 -o "$shim" "$WGT_ROOT/tests/reliability/stop_before_commit.c" -ldl ||
    { fail "building the LD_PRELOAD shim"; echo "$fails failure(s)"; exit 1; }
big=$tmp/big
mkdir -p "$big"
cat >"$big/config.json" <<'EOF2'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024, "intermediate_size": 2048,
 "num_attention_heads": 8, "num_key_value_heads": 8, "num_hidden_layers": 1, "vocab_size": 8192,
 "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "tie_word_embeddings": true}
EOF2
header='{"model.embed_tokens.weight":{"dtype":"F32","shape":[8192,1024],"data_offsets":[0,33554432]}}'
while [ $(( ${#header} % 8 )) != 0 ]; do header="$header "; done
n=${#header}
{
    printf "$(printf '\\%03o' $((n & 255)) $(((n >> 8) & 255)) 0 0 0 0 0 0)"
    printf '%s' "$header"
} >"$big/model.safetensors"
truncate -s $((8 + n + 33554432)) "$big/model.safetensors"
big_sum=$(sha256sum <"$big/model.safetensors")
printf 'previous good file\n' >"$tmp/prev.expected"
proc_state() { sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1; }
# job control on: without it a script's background jobs ignore SIGINT, as a shell's do
set -m
for sig in INT TERM KILL; do
    cp "$tmp/prev.expected" "$tmp/prev.gguf"
    LD_PRELOAD=$shim WGT_THREADS=1 "$WGT_BIN" convert "$big" "$tmp/prev.gguf" --type q4_k --force >"$tmp/sig.log" 2>&1 &
    pid=$!
    # wait until the shim has stopped it (at most two minutes on a loaded machine)
    for _ in $(seq 1200); do
        [ "$(proc_state $pid)" = T ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    if [ "$(proc_state $pid)" != T ]; then
        fail "SIG$sig: the conversion never reached its commit (state '$(proc_state $pid)'):"; tail -3 "$tmp/sig.log"
        kill -KILL $pid 2>/dev/null; wait $pid
        continue
    fi
    [ -n "$(find "$tmp" -maxdepth 1 -name '.prev.gguf.wgt-*' | head -1)" ] &&
        ok "SIG$sig: stopped with its temporary file written" || fail "SIG$sig: stopped, but no temporary file"
    kill -"$sig" $pid
    kill -CONT $pid 2>/dev/null
    # with job control, wait also returns 128 + SIGSTOP (147) for the stop it had not reported
    # yet; a process cannot die of SIGSTOP, so wait again for its end
    for _ in 1 2 3 4 5; do
        wait $pid
        rc=$?
        [ $rc = $((128 + $(kill -l STOP))) ] || break
    done
    cmp -s "$tmp/prev.gguf" "$tmp/prev.expected" && ok "SIG$sig (exit $rc): the previous file is intact" ||
        fail "SIG$sig: the previous file was damaged ($(head -c 16 "$tmp/prev.gguf" | od -c | head -1))"
    left=$(find "$tmp" -maxdepth 1 -name '.prev.gguf.wgt-*' | wc -l)
    if [ "$sig" = KILL ]; then
        echo "ok: SIGKILL leaves $left temporary file(s) (at most one expected)"
        [ "$left" -le 1 ] || fail "SIGKILL: $left temporary files"
        find "$tmp" -maxdepth 1 -name '.prev.gguf.wgt-*' -delete
    else
        [ "$left" = 0 ] && ok "SIG$sig: the temporary file was removed" || fail "SIG$sig: $left temporary files left"
        [ $rc = $((128 + $(kill -l "$sig"))) ] && ok "SIG$sig: died of the signal" || fail "SIG$sig: exit $rc"
    fi
done
# and without the shim the same conversion completes and replaces the previous file
cp "$tmp/prev.expected" "$tmp/prev.gguf"
WGT_THREADS=1 "$WGT_BIN" convert "$big" "$tmp/prev.gguf" --type q4_k --force >"$tmp/sig.log" 2>&1 &&
    [ "$(head -c 4 "$tmp/prev.gguf")" = GGUF ] && ok "without a signal the conversion replaces the file" ||
    { fail "the conversion without a signal failed:"; tail -3 "$tmp/sig.log"; }
set +m
[ "$(sha256sum <"$big/model.safetensors")" = "$big_sum" ] && ok "the big checkpoint is unchanged" || fail "the big checkpoint changed"
inputs_intact "signals"

echo "$fails failure(s)"
[ $fails = 0 ]
