// The reference side of the tokenizer benchmark: node bench.mjs KIND TOKENIZER TEXT_FILE [REPEATS]
// KIND: hf (@huggingface/tokenizers on a tokenizer.json), gpt3 (gpt-3-encoder), llamajs (llama-tokenizer-js).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";
import llamaTokenizer from "llama-tokenizer-js";

const [kind, tokPath, file, repeatsArg] = process.argv.slice(2);
const text = readFileSync(file, "utf8");
const bytes = Buffer.byteLength(text);
const require = createRequire(import.meta.url);
let t0 = performance.now();
let encode;
if (kind === "hf") {
  const cfgPath = join(dirname(tokPath), "tokenizer_config.json");
  const tok = new Tokenizer(JSON.parse(readFileSync(tokPath, "utf8")), JSON.parse(readFileSync(cfgPath, "utf8")));
  encode = (s) => tok.encode(s, { add_special_tokens: false }).ids;
} else if (kind === "gpt3") {
  const gpt3 = require("gpt-3-encoder");
  encode = (s) => gpt3.encode(s);
} else {
  encode = (s) => llamaTokenizer.encode(s, false, true);
}
const load = (performance.now() - t0) / 1000;
// Line by line: the references are not built for one 5 MB string (gpt-3-encoder and
// llama-tokenizer-js slow down badly); the same split is applied to wgt (see bench.sh).
let first = 0, best = 1e30, n = 0;
const lines = text.split("\n");
for (let r = 0; r < Number(repeatsArg || 2); r++) {
  t0 = performance.now();
  n = 0;
  for (let i = 0; i < lines.length; i++) n += encode(i + 1 < lines.length ? lines[i] + "\n" : lines[i]).length;
  const dt = (performance.now() - t0) / 1000;
  if (r === 0) first = dt;
  best = Math.min(best, dt);
}
console.log(`node  load ${load.toFixed(2)} s  ${n} tokens  first ${(bytes / first / 1e6).toFixed(1)} MB/s  best ${(bytes / best / 1e6).toFixed(1)} MB/s`);
