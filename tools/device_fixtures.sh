#!/bin/bash
# The one command that regenerates everything made with PyTorch, on the H200 (device tool):
# the Hugging Face fixtures (tools/make_fixtures.py, on the CPU, in the background) and the default
# model (tools/train_default_model.py, on the GPU), packed into $OUT.
#
# Before (here):
#   sh tools/train_tokenizer.sh            # models/bible-llama/tokenizer.model (travels as a repo file)
#   mkdir -p .devdata && cp ../shared/data/world-english-bible.txt .devdata/
#   grep -qx '/.devdata/' .git/info/exclude || echo '/.devdata/' >> .git/info/exclude
# The call (device tool `run`, kind nvidia-h200; 3-4 minutes of the machine, its start included):
#   command: bash tools/device_fixtures.sh      carry: [".devdata"]      timeout_s: 600
# After, in the repository root (FILES is the reply's files_at folder):
#   tar xzf FILES/fixtures.tar.gz        # tests/fixtures/hf/<arch>/..., tests/fixtures/hf/bible-llama-greedy.json
#   tar xzf FILES/default_model.tar.gz   # models/bible-llama/..., tools/loss_curve.png
#   FILES/log.txt holds the whole output (losses, samples, margins).
# TRAIN_SECONDS (default 45) sets the training loop's wall time; FIXTURES=0 skips the fixtures
# (they are deterministic: a rerun rewrites the same ids and logits).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/wgt_out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader
  python3 -c 'import torch, transformers, sentencepiece, safetensors, matplotlib, numpy
print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "transformers", transformers.__version__,
      "sentencepiece", sentencepiece.__version__, "safetensors", safetensors.__version__)'
  rm -f models/bible-llama/model.safetensors
  fpid=
  if [ "${FIXTURES:-1}" != 0 ]; then
    rm -rf tests/fixtures/hf
    timeout 420 python3 tools/make_fixtures.py --threads 8 > "$OUT/fixtures_log.txt" 2>&1 &
    fpid=$!
  fi
  timeout 480 python3 tools/train_default_model.py --data .devdata/world-english-bible.txt \
      --seconds "${TRAIN_SECONDS:-45}"
  echo "train exit $?"
  if [ -n "$fpid" ]; then
    wait $fpid
    echo "fixtures exit $?"
    cat "$OUT/fixtures_log.txt"
  fi
  date -u
} 2>&1 | tee "$OUT/log.txt"
tar czf "$OUT/fixtures.tar.gz" tests/fixtures/hf  # with FIXTURES=0: only bible-llama-greedy.json is new
tar czf "$OUT/default_model.tar.gz" models/bible-llama tools/loss_curve.png
ls -la "$OUT"
echo "=== summary"
grep -E "^\[train\] (step 0|done|wrote|greedy|sampled|f32|AutoTok)|^\[fixtures\] [a-z0-9]+: seed|min margins|FAILED|exit" \
  "$OUT/log.txt" | cut -c1-400
