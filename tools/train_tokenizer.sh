#!/bin/sh
# Trains the SentencePiece tokenizer of the default model (models/bible-llama/tokenizer.model)
# with Debian's spm_train (package sentencepiece), on the World English Bible.
#
#   sh tools/train_tokenizer.sh [bible.txt] [out_dir]
#
# Settings follow Llama 2's tokenizer: BPE, byte fallback (no <unk> in practice), digits split,
# a dummy prefix space, no normalization (identity) and no whitespace squeezing, so a reader only
# needs the pieces and their scores. ids: 0 <unk>, 1 <s>, 2 </s>, then 256 byte pieces <0x00>..<0xFF>.
# The text is prepared exactly as tools/train_default_model.py prepares it: each line stripped of
# leading/trailing whitespace, empty lines dropped.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
in=${1:-$root/../shared/data/world-english-bible.txt}
out=${2:-$root/models/bible-llama}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$in" | grep -v '^$' > "$tmp/text.txt"
spm_train --input="$tmp/text.txt" --model_prefix="$tmp/tok" \
  --vocab_size=4096 --model_type=bpe --character_coverage=1.0 --byte_fallback=true \
  --split_digits=true --add_dummy_prefix=true --normalization_rule_name=identity \
  --remove_extra_whitespaces=false --allow_whitespace_only_pieces=true \
  --split_by_unicode_script=true --split_by_whitespace=true --max_sentence_length=65536 \
  --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 --input_sentence_size=0 \
  --num_threads=2 --minloglevel=1
cp "$tmp/tok.model" "$out/tokenizer.model"
echo "wrote $out/tokenizer.model"
