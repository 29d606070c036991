"""Cross-check with Hugging Face's own tokenizers (the Rust crate, through Python) and Google's
sentencepiece, where they are installed (the H200 image has transformers): every line of the
World English Bible, id for id, plus encoding speed side by side on one core.

Usage: python3 hf_rust_check.py DIR   (DIR from the tarball tests/tokenizer/device/t.tar.xz:
bin/ with wgt + bench_tokenizer + their libraries, llama3/ qwen3/ mistral/ gpt2/,
llama2-tokenizer.model, bible.txt). Not part of the test suite: no such packages here."""
import json, os, subprocess, sys, time

os.environ["RAYON_NUM_THREADS"] = "1"  # one core, like wgt

d = sys.argv[1]
env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(d, "bin"))
wgt = os.path.join(d, "bin", "wgt")
text = open(os.path.join(d, "bible.txt"), encoding="utf-8").read()
parts = text.split("\n")
lines = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
mb = len(text.encode()) / 1e6
jsonl = os.path.join(d, "lines.jsonl")
with open(jsonl, "w") as f:
    for l in lines:
        f.write(json.dumps(l) + "\n")


def ours(tok):
    out = subprocess.run([wgt, "tokenize", "-t", tok, "--no-bos", "--no-special", "--jsonl", jsonl], env=env,
                         check=True, capture_output=True, text=True).stdout.split("\n")[:-1]
    return [[int(x) for x in l.split()] for l in out]


def bench(tok):
    return subprocess.run([os.path.join(d, "bin", "bench_tokenizer"), tok, os.path.join(d, "bible.txt"), "3"], env=env,
                          check=True, capture_output=True, text=True).stdout.strip()


def report(label, tok, ref_lines, ref_whole, ref_time_lines, ref_time_whole, who):
    got = ours(tok)
    same = sum(1 for a, b in zip(got, ref_lines) if a == b)
    print(f"== {label}: {same}/{len(lines)} lines identical to {who}" + ("" if same == len(lines) else "  MISMATCH"))
    for a, b, l in zip(got, ref_lines, lines):
        if a != b:
            print("   first mismatch:", json.dumps(l)[:100], "\n   ours", a[:20], "\n   want", b[:20])
            break
    print("  ", bench(tok).replace("\n", "\n   "))
    print(f"   ref   {who}: {ref_whole} tokens (whole file); line by line {mb / ref_time_lines:.1f} MB/s, "
          f"whole file {mb / ref_time_whole:.1f} MB/s")
    sys.stdout.flush()


try:
    import tokenizers
    from tokenizers import Tokenizer, models, pre_tokenizers
    who = f"tokenizers {tokenizers.__version__} (Rust)"
    for name in ["llama3", "qwen3", "mistral"]:
        tj = os.path.join(d, name, "tokenizer.json")
        tk = Tokenizer.from_file(tj)
        best_l = best_w = 1e9
        for _ in range(2):
            t0 = time.perf_counter(); ref = [tk.encode(l, add_special_tokens=False).ids for l in lines]
            best_l = min(best_l, time.perf_counter() - t0)
            t0 = time.perf_counter(); whole = tk.encode(text, add_special_tokens=False).ids
            best_w = min(best_w, time.perf_counter() - t0)
        report(name + " tokenizer.json", tj, ref, len(whole), best_l, best_w, who)
    g = os.path.join(d, "gpt2")
    tk = Tokenizer(models.BPE.from_file(os.path.join(g, "encoder.json"), os.path.join(g, "vocab.bpe")))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t0 = time.perf_counter(); ref = [tk.encode(l).ids for l in lines]; tl = time.perf_counter() - t0
    t0 = time.perf_counter(); whole = tk.encode(text).ids; tw = time.perf_counter() - t0
    report("gpt2 encoder.json + vocab.bpe", g, ref, len(whole), tl, tw, who)
except ImportError as e:
    print("tokenizers not installed:", e)

try:
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=os.path.join(d, "llama2-tokenizer.model"))
    t0 = time.perf_counter(); ref = [sp.encode(l) for l in lines]; tl = time.perf_counter() - t0
    t0 = time.perf_counter(); whole = sp.encode(text); tw = time.perf_counter() - t0
    report("llama2 .model", os.path.join(d, "llama2-tokenizer.model"), ref, len(whole), tl, tw,
           f"sentencepiece {spm.__version__}")
except ImportError as e:
    print("sentencepiece not installed:", e)
