// Reads a GGUF file with the independent parser (@huggingface/gguf) and compares its metadata
// and tensor infos with our reader's view (JSON from `test_gguf --dump`, file argv[3]).
// Optional argv[4]: a JSON object of {key: expected value} spot checks. Exits 1 on a mismatch.
import { gguf } from "@huggingface/gguf";
import { readFileSync } from "node:fs";

const [file, oursPath, expectPath] = process.argv.slice(2);
const theirs = await gguf(file, { allowLocalFile: true, typedMetadata: true });
const ours = JSON.parse(readFileSync(oursPath, "utf8"));
let failures = 0;
const fail = (msg) => { failures++; console.error("MISMATCH " + msg); };

// one canonical form for both sides: 64-bit integers as strings, other numbers as numbers
function canon(v, type, subType) {
  if (Array.isArray(v)) return v.map((x) => canon(x, subType === 9 ? 9 : subType, undefined));
  if (typeof v === "bigint") return v.toString();
  if (type === 10 || type === 11) return String(v);
  // @huggingface/gguf decodes strings with TextDecoder's default, which drops a leading U+FEFF
  // (the Llama 2 vocabulary has the token "\uFEFF"): compare both sides without it
  if (typeof v === "string") return v.replace(/^\uFEFF/, "");
  return v;
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

const skip = new Set(["version", "tensor_count", "kv_count"]);
const theirKeys = Object.keys(theirs.typedMetadata).filter((k) => !skip.has(k));
const ourKeys = Object.keys(ours.kv);
if (!same(theirKeys, ourKeys)) fail(`keys: theirs ${theirKeys.length} ${theirKeys}, ours ${ourKeys.length} ${ourKeys}`);
if (Number(theirs.typedMetadata.version.value) !== ours.version) fail(`version ${theirs.typedMetadata.version.value} vs ${ours.version}`);
for (const k of ourKeys) {
  const t = theirs.typedMetadata[k];
  if (!t) continue;
  const o = ours.kv[k];
  if (t.type !== o.type || (o.type === 9 && t.subType !== o.subType)) fail(`${k}: type ${t.type}/${t.subType} vs ${o.type}/${o.subType}`);
  const a = canon(t.value, t.type, t.subType), b = canon(o.value, o.type, o.subType);
  if (!same(a, b)) fail(`${k}: theirs ${JSON.stringify(a).slice(0, 200)} ours ${JSON.stringify(b).slice(0, 200)}`);
}
if (String(theirs.tensorDataOffset) !== ours.tensorDataOffset) fail(`tensorDataOffset ${theirs.tensorDataOffset} vs ${ours.tensorDataOffset}`);
if (theirs.tensorInfos.length !== ours.tensors.length) fail(`tensor count ${theirs.tensorInfos.length} vs ${ours.tensors.length}`);
theirs.tensorInfos.forEach((t, i) => {
  const o = ours.tensors[i] || {};
  const a = { name: t.name, n_dims: t.n_dims, shape: t.shape.map(String), dtype: t.dtype, offset: String(t.offset) };
  if (!same(a, o)) fail(`tensor ${i}: theirs ${JSON.stringify(a)} ours ${JSON.stringify(o)}`);
});
if (expectPath) {
  const expect = JSON.parse(readFileSync(expectPath, "utf8"));
  for (const [k, v] of Object.entries(expect)) {
    const t = theirs.typedMetadata[k];
    const got = t === undefined ? undefined : canon(t.value, t.type, t.subType);
    if (!same(got, v)) fail(`expected ${k} = ${JSON.stringify(v)}, the independent parser reads ${JSON.stringify(got)}`);
  }
}
console.log(`${file}: ${ourKeys.length} keys, ${ours.tensors.length} tensors: ` + (failures ? `${failures} mismatches` : "both parsers agree"));
process.exit(failures ? 1 : 0);
