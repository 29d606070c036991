// The page: load a model (bundled, URL, or a local GGUF), generate with streaming text and tok/s,
// chat with the model's template, show the adapter. Automation:
//   index.html?model=URL&prompt_ids=1,2,3&n=16&temp=0   (or prompt=TEXT instead of prompt_ids)
// generates without interaction, writes the generated ids (space-separated) into <pre id="ids">,
// then sets document.title to "done", or to "error" with the message in <div id="error">.
import { Wgt, TOKENIZE_ADD_SPECIAL, TOKENIZE_PARSE_SPECIAL } from './wgt.js';

const $ = (id) => document.getElementById(id);
const DEFAULT_MODEL = 'models/bible-llama.gguf';
const CACHE = 'wgt-models-v1';
// wasm32: 4 GiB of memory, which holds the file while the weights are uploaded.
const MAX_FILE = 3.5 * 2 ** 30;

let wgt = null, modelInfo = null, busy = false, stopRequested = false, chat = [];
const dec = new TextDecoder();

function setStatus(text, frac) {
  $('status').textContent = text;
  if (frac === undefined) $('progress').removeAttribute('value'); else $('progress').value = frac;
}
function showError(e) { $('error').textContent = e instanceof Error ? e.message : String(e); }
function mb(n) { return (n / 2 ** 20).toFixed(1) + ' MB'; }

async function start() {
  wgt = await Wgt.load({ stdout: (s) => console.log(s), stderr: (s) => console.warn(s) });
  const info = await wgt.init();
  $('adapter').textContent = `${info.name}${info.driver && info.driver !== info.name ? ` — ${info.driver}` : ''}` +
    `${info.vendor ? ` (${info.vendor})` : ''}${info.is_cpu ? ', a software adapter' : ''}`;
  $('limits').textContent = 'features: ' + Object.entries(info.features).map(([k, v]) => `${k} ${v ? 'yes' : 'no'}`).join(', ') +
    '\n' + Object.entries(info.limits).map(([k, v]) => `${k}: ${v}`).join('\n') + `\nimplementation: ${info.library}`;
  return info;
}

// The bytes at url, from the browser's cache storage when an earlier visit stored them.
async function fetchModel(url) {
  const cache = typeof caches !== 'undefined' ? await caches.open(CACHE).catch(() => null) : null;
  const hit = cache ? await cache.match(url) : null;
  if (hit) {
    setStatus(`reading ${url} from the browser's cache…`);
    return new Uint8Array(await hit.arrayBuffer());
  }
  let res;
  try { res = await fetch(url); } catch (e) { throw new Error(`${url}: cannot fetch (${e.message}); a URL on another site must allow cross-origin requests (CORS)`); }
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${res.statusText}`);
  const total = Number(res.headers.get('content-length')) || 0;
  if (total > MAX_FILE) throw new Error(`${url}: ${mb(total)} is too large for the browser build (the WebAssembly memory holds at most 4 GiB)`);
  const reader = res.body.getReader(), parts = [];
  let got = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value); got += value.length;
    if (got > MAX_FILE) throw new Error(`${url}: more than ${mb(MAX_FILE)}: too large for the browser build`);
    setStatus(`downloading ${url}: ${mb(got)}${total ? ` of ${mb(total)}` : ''}`, total ? got / total : undefined);
  }
  const bytes = new Uint8Array(got);
  let off = 0;
  for (const p of parts) { bytes.set(p, off); off += p.length; }
  if (cache) await cache.put(url, new Response(bytes, { headers: { 'content-type': 'application/octet-stream' } })).catch((e) =>
    console.warn(`not cached (${e.message})`));
  return bytes;
}

async function loadModel(name, getBytes) {
  if (busy) return;
  busy = true;
  showError('');
  $('generate').disabled = true;
  try {
    const bytes = await getBytes();
    const magic = dec.decode(bytes.subarray(0, 4));
    if (magic !== 'GGUF')
      throw new Error(`${name} is not a model: a GGUF file begins with "GGUF", this one with ${JSON.stringify(magic)}`);
    if (bytes.length > MAX_FILE) throw new Error(`${name}: ${mb(bytes.length)} is too large for the browser build (4 GiB of WebAssembly memory)`);
    setStatus(`parsing ${name} and uploading its weights to the GPU…`);
    await wgt.freeModel();
    // the module's file system holds it under its own name, which the loader's messages then show
    const MODEL_PATH = '/models/' + (name.replace(/[?#].*$/, '').split('/').filter(Boolean).pop() || 'model.gguf').replace(/[^A-Za-z0-9._-]/g, '_');
    wgt.putFile(MODEL_PATH, bytes);
    const f32 = new URLSearchParams(location.search).get('f32');
    try { modelInfo = await wgt.openModel(MODEL_PATH, 0, f32 === null ? undefined : f32 === '1'); } finally { wgt.removeFile(MODEL_PATH); }
    chat = [];
    setStatus(`${name} loaded`, 1);
    $('model-info').textContent = `${name}: ${modelInfo.arch}, vocabulary ${modelInfo.vocab}, context ${modelInfo.context}, ` +
      `${mb(modelInfo.weight_bytes)} of weights on the GPU` +
      (modelInfo.tokenizer ? '' : `\nno tokenizer${modelInfo.tokenizer_error ? ': ' + modelInfo.tokenizer_error : ''} (token ids only)`);
    $('generate').disabled = false;
  } catch (e) {
    setStatus('', 0);
    throw e;
  } finally { busy = false; }
}

function settings() {
  const num = (id) => Number($(id).value);
  return { temperature: num('temp'), topK: num('top-k'), topP: num('top-p'), minP: num('min-p'),
    repeatPenalty: num('repeat'), seed: num('seed'), ignoreEos: $('ignore-eos').checked };
}

async function generate() {
  if (busy || !modelInfo) return;
  busy = true; stopRequested = false;
  showError('');
  $('generate').disabled = true; $('stop').disabled = false;
  const out = $('output'), isChat = $('chat').checked, text = $('prompt').value;
  try {
    let ids;
    if (isChat) {
      chat.push({ role: 'user', content: text });
      ids = wgt.encode(wgt.chatTemplate(chat), TOKENIZE_PARSE_SPECIAL);
      const u = document.createElement('div'); u.className = 'user'; u.textContent = text;
      out.append(u);
    } else {
      ids = wgt.encode(text);
      out.textContent = text;
    }
    const span = document.createElement('span');
    out.append(span);
    let n = 0, t0 = 0, reply = '';
    const bytes = [];
    const stats = await wgt.generate(ids, Number($('n').value), { ...settings(), reset: !isChat, chat: isChat }, (id, b) => {
      if (n++ === 0) t0 = performance.now();
      else $('speed').textContent = `${((n - 1) / ((performance.now() - t0) / 1000)).toFixed(1)} tok/s`;
      if (b.length) { bytes.push(...b); const s = dec.decode(new Uint8Array(bytes)); span.textContent = s; reply = s; }
      return stopRequested;
    });
    const pre = stats.n_prompt / Math.max(stats.prefill_seconds, 1e-9), dec_ = stats.n_generated / Math.max(stats.decode_seconds, 1e-9);
    $('speed').textContent = `prompt ${stats.n_prompt} tokens at ${pre.toFixed(1)} tok/s; ${stats.n_generated} generated at ` +
      `${dec_.toFixed(1)} tok/s${stats.context_full ? ' (the context is full)' : ''}`;
    if (isChat) chat.push({ role: 'assistant', content: reply });
  } finally {
    busy = false;
    $('generate').disabled = false; $('stop').disabled = true;
  }
}

// index.html?model=URL&prompt_ids=1,2,3&n=16&temp=0. prompt_ids and prompt (text) may repeat: each
// prompt is generated in turn from an empty cache (one model load, kernels compiled once), and
// <pre id="ids"> gets one line per prompt, prompt_ids first.
async function automate(q) {
  const url = q.get('model') || DEFAULT_MODEL;
  const tLoad = performance.now();
  await loadModel(url, () => fetchModel(url));
  const loadSeconds = (performance.now() - tLoad) / 1000;
  const prompts = q.getAll('prompt_ids').map((list) => list.split(',').map((s) => {
    if (!/^\d+$/.test(s)) throw new Error(`prompt_ids: '${s}' is not a token id`);
    return Number(s);
  }));
  for (const text of q.getAll('prompt')) prompts.push(wgt.encode(text));
  if (!prompts.length) prompts.push(wgt.encode(''));
  const n = Number(q.get('n') || 16), num = (k, d) => (q.has(k) ? Number(q.get(k)) : d);
  const lines = [];
  let generated = 0, seconds = 0;
  const prefills = [], decodes = []; // per prompt: prefill seconds, decode tok/s
  for (const ids of prompts) {
    const got = [];
    const stats = await wgt.generate(ids, n, { temperature: num('temp', 0), topK: num('top_k', 0), topP: num('top_p', 0),
      minP: num('min_p', 0), repeatPenalty: num('repeat_penalty', 1), seed: num('seed', 1234), ignoreEos: q.get('ignore_eos') === '1' },
    (id) => { got.push(id); return false; });
    lines.push(got.join(' '));
    generated += stats.n_generated; seconds += stats.decode_seconds;
    prefills.push(stats.prefill_seconds);
    decodes.push((stats.n_generated - 1) / Math.max(stats.decode_seconds, 1e-9));
  }
  $('ids').textContent = lines.join('\n');
  // decode tok/s counts the tokens after each prompt's first (the first comes with the prefill)
  const tps = (generated - prompts.length) / Math.max(seconds, 1e-9);
  // the first prompt's prefill also compiles the kernels (slow on a software adapter)
  $('speed').textContent = `decode ${tps.toFixed(2)} tok/s; prefill ${prefills.map((x) => x.toFixed(1)).join(', ')} s; ` +
    `model load ${loadSeconds.toFixed(1)} s`;
  $('ids').dataset.decodeTokS = String(tps);
  $('ids').dataset.decodeTokSEach = decodes.join(' ');
}

function wire() {
  $('load-default').onclick = () => loadModel(DEFAULT_MODEL, () => fetchModel(DEFAULT_MODEL)).catch(showError);
  $('load-url').onclick = () => {
    const url = $('model-url').value.trim();
    if (url) loadModel(url, () => fetchModel(url)).catch(showError);
  };
  const fromFile = (f) => loadModel(f.name, async () => {
    if (f.size > MAX_FILE) throw new Error(`${f.name}: ${mb(f.size)} is too large for the browser build (4 GiB of WebAssembly memory)`);
    setStatus(`reading ${f.name}…`);
    return new Uint8Array(await f.arrayBuffer());
  }).catch(showError);
  $('model-file').onchange = (e) => e.target.files[0] && fromFile(e.target.files[0]);
  const drop = document.body;
  drop.addEventListener('dragover', (e) => { e.preventDefault(); $('drop').classList.add('over'); });
  drop.addEventListener('dragleave', () => $('drop').classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault(); $('drop').classList.remove('over');
    if (e.dataTransfer.files[0]) fromFile(e.dataTransfer.files[0]);
  });
  $('generate').onclick = () => generate().catch(showError);
  $('stop').onclick = () => { stopRequested = true; };
  $('new-chat').onclick = () => { chat = []; $('output').textContent = ''; };
}

async function main() {
  const q = new URLSearchParams(location.search);
  wire();
  try {
    await start();
  } catch (e) {
    $('adapter').textContent = 'no WebGPU';
    throw e;
  }
  if (q.has('model') || q.has('prompt_ids') || q.has('prompt')) {
    await automate(q);
    document.title = 'done';
  }
}

main().catch((e) => { showError(e); document.title = 'error'; });
