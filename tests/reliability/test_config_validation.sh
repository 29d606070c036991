#!/usr/bin/env bash
# Model hyper-parameters are checked in one place (src/models/validate.c) by every path that reads
# them: a config.json alone (wgt bench -m), a Hugging Face directory (wgt generate -m DIR) and
# wgt convert. Each broken configuration below must be refused with a message naming the field,
# quickly, before anything is allocated. Before this check: heads 0 was SIGFPE, 100000 layers
# allocated 12.5 GB in 40 s, a negative rope theta became 10000, an implied head size was rounded
# down, bos/eos ids past the vocabulary were dropped or wrapped, and convert wrote GGUF files of
# such configurations that the loader then refused.
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?}
base=$root/models/bible-llama
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0 n=0

# config FILE KEY=JSON... : bible-llama's config.json with the keys replaced (DEL removes one)
config() {
    node -e 'const fs = require("fs"); const [base, out, ...kv] = process.argv.slice(1);
      const c = JSON.parse(fs.readFileSync(base, "utf8"));
      for (const s of kv) { const i = s.indexOf("="), k = s.slice(0, i), v = s.slice(i + 1);
        if (v === "DEL") delete c[k]; else c[k] = JSON.parse(v); }
      fs.writeFileSync(out, JSON.stringify(c));' "$base/config.json" "$@"
}

# refused "message part" KEY=JSON... : refused by bench -m config.json, generate -m DIR and convert
refused() {
    local want=$1; shift
    n=$((n + 1))
    config "$tmp/config.json" "$@"
    local t0=$SECONDS
    timeout 60 "$wgt" bench -m "$tmp/config.json" -p 4 -n 2 >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc = 0 ] || [ $rc -gt 127 ] || ! grep -qF -- "$want" "$tmp/err"; then
        echo "FAIL: bench -m config.json with $*: exit $rc, want a refusal naming '$want':"; tail -2 "$tmp/err"; fail=1
    elif [ $((SECONDS - t0)) -gt 30 ]; then
        echo "FAIL: bench with $* took $((SECONDS - t0)) s to refuse"; fail=1
    fi
    # the same directory as a model and as a conversion input (the weights are bible-llama's)
    # (without generation_config.json, whose bos/eos ids would override the config's)
    rm -rf "$tmp/dir"; mkdir "$tmp/dir"; cp "$base"/* "$tmp/dir/"; cp "$tmp/config.json" "$tmp/dir/config.json"
    rm -f "$tmp/dir/generation_config.json"
    timeout 60 "$wgt" generate -m "$tmp/dir" --prompt-ids 1 -n 1 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc = 0 ] || [ $rc -gt 127 ] || ! grep -qF -- "$want" "$tmp/err"; then
        echo "FAIL: generate -m DIR with $*: exit $rc, want '$want':"; tail -2 "$tmp/err"; fail=1
    fi
    timeout 60 "$wgt" convert "$tmp/dir" "$tmp/out.gguf" --type f16 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc = 0 ] || [ $rc -gt 127 ] || ! grep -qF -- "$want" "$tmp/err" || [ -e "$tmp/out.gguf" ]; then
        echo "FAIL: convert with $*: exit $rc, want '$want' and no output file:"; tail -2 "$tmp/err"; fail=1
    fi
    rm -f "$tmp/out.gguf"
}

refused "num_attention_heads (GGUF: attention.head_count) is 0" num_attention_heads=0 head_dim=DEL
refused "num_attention_heads (GGUF: attention.head_count) is 0" num_attention_heads=0
refused "num_hidden_layers (GGUF: block_count) is 0" num_hidden_layers=0
refused "num_hidden_layers (GGUF: block_count) is 3000000000: it must be from 1 to 2147483647" num_hidden_layers=3000000000
refused "hidden_size is -4: out of range" hidden_size=-4
refused "vocab_size (GGUF: rows of token_embd.weight) is 0" vocab_size=0
refused "intermediate_size (GGUF: feed_forward_length) is 0" intermediate_size=0
refused "8 heads not a multiple of 3 kv heads" num_key_value_heads=3
refused "8 heads not a multiple of 16 kv heads" num_key_value_heads=16
refused "hidden_size 250 is not a multiple of num_attention_heads 8, and no head_dim is given" hidden_size=250 head_dim=DEL
refused "head_dim (GGUF: attention.key_length) is 31: rotary embeddings need an even head size" head_dim=31
refused "rms_norm_eps is 0: it must be a finite number above 0" rms_norm_eps=0
refused "rms_norm_eps is -1e-05" rms_norm_eps=-1e-5
refused "rope_theta (GGUF: rope.freq_base) is -5" 'rope_parameters={"rope_theta": -5, "rope_type": "default"}'
refused "rope_theta (GGUF: rope.freq_base) is 0" 'rope_parameters={"rope_theta": 0, "rope_type": "default"}'
refused "bos_token_id 4096 is outside the vocabulary of 4096 tokens" bos_token_id=4096
refused "eos_token_id 99999 is outside the vocabulary of 4096 tokens" eos_token_id=99999
refused "bos_token_id is past 2^31, outside the vocabulary of 4096 tokens" bos_token_id=5000000000
refused "rope_scaling.factor is 0" 'rope_scaling={"rope_type": "linear", "factor": 0}'

# memory: 100000 layers is refused at once with the figures (it allocated for 40 s before)
config "$tmp/config.json" num_hidden_layers=100000
t0=$SECONDS
"$wgt" bench -m "$tmp/config.json" -p 4 -n 2 >/dev/null 2>"$tmp/err"; rc=$?
grep -q "the model needs about [0-9.]* GB (weights [0-9.]* GB for 100000 layers, KV cache" "$tmp/err" && [ $rc = 1 ] ||
    { echo "FAIL: 100000 layers: exit $rc, $(cat "$tmp/err")"; fail=1; }
[ $((SECONDS - t0)) -le 30 ] || { echo "FAIL: 100000 layers took $((SECONDS - t0)) s to refuse"; fail=1; }
# the estimate against an independent sum for bible-llama's shape at f16: embedding (tied) 4096 x 256,
# 8 layers of q/k/v/o (256x256, 128x256 twice, 256x256) and gate/up/down (704 x 256) in f16, norms
# f32; KV cache 2 x 8 layers x 4 kv heads x 32 x 14 positions x 4 bytes (-p 4 -n 2, + 8 as bench asks)
want=$(node -e 'const D=256,F=704,L=8,V=4096,q=256,kv=128,hd=32,T=14;
  const w=V*D*2 + L*((q*D+2*kv*D+D*q+3*F*D)*2 + (4*D+q+2*kv+F+2*hd)*4) + 2*D*4;
  const kvc=2*L*kv*T*4, act=T*(4*D+q+2*kv+q+3*F)*4+V*4; console.log(((w+kvc+act)/1e9).toFixed(2))')
WGT_MEMORY_LIMIT=1K "$wgt" bench -m "$base/config.json" -p 4 -n 2 >/dev/null 2>"$tmp/err"
grep -q "needs about $want GB" "$tmp/err" || { echo "FAIL: WGT_MEMORY_LIMIT=1K: want about $want GB: $(cat "$tmp/err")"; fail=1; }
grep -q "more than the 0.00 GB WGT_MEMORY_LIMIT allows" "$tmp/err" || { echo "FAIL: the limit is not named"; fail=1; }
WGT_MEMORY_LIMIT=lots "$wgt" bench -m "$base/config.json" -p 4 -n 2 >/dev/null 2>"$tmp/err"
grep -q "WGT_MEMORY_LIMIT='lots' is not a size" "$tmp/err" || { echo "FAIL: WGT_MEMORY_LIMIT=lots: $(cat "$tmp/err")"; fail=1; }

[ $fail = 0 ] && echo "config validation: ok ($n configurations, each through bench, generate and convert)"
exit $fail
