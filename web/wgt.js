// wgt in the browser: loads wgt.wasm (the library built by `make web`) with its imports (WASI from
// wasi.js, webgpu.h from wgpu.js) and offers the page a small promise-based API.
//
// JSPI (JavaScript Promise Integration): the exports that may wait on the GPU are wrapped in
// WebAssembly.promising, and wgpuInstanceProcessEvents in WebAssembly.Suspending, so the C code's
// waits suspend the WebAssembly stack and hand the thread back to the browser. Every call below that
// reaches the GPU returns a promise; calls must not overlap (one model, one context).
import { Wasi } from './wasi.js';
import { WebGPUImports } from './wgpu.js';

export const TOKENIZE_ADD_SPECIAL = 1, TOKENIZE_PARSE_SPECIAL = 2;

export function jspiAvailable() {
  return typeof WebAssembly.Suspending === 'function' && typeof WebAssembly.promising === 'function';
}

export class Wgt {
  static async load({ url = 'wgt.wasm', stdout = console.log, stderr = console.warn, env = {} } = {}) {
    if (!jspiAvailable())
      throw new Error('this browser lacks WebAssembly JSPI (WebAssembly.Suspending / promising), which the ' +
        'browser build uses to wait for the GPU without blocking: use Chrome/Edge 137 or later');
    const w = new Wgt();
    w.wasi = new Wasi({ stdout, stderr, env });
    w.gpu = new WebGPUImports({ log: stderr });
    w.onToken = null;
    const imports = {
      wasi_snapshot_preview1: w.wasi.imports,
      wgpu: w.gpu.imports,
      wgt: { on_token: (id, text, len) => (w.onToken ? (w.onToken(id, w.bytes(text >>> 0, len >>> 0)) ? 1 : 0) : 0) },
    };
    const res = await fetch(url);
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
    const { instance } = await WebAssembly.instantiateStreaming(res, imports);
    const ex = instance.exports;
    w.ex = ex;
    w.wasi.setMemory(ex.memory);
    ex._initialize();
    w.gpu.attach(ex);
    const wait = ['wgt_web_init', 'wgt_web_model_open', 'wgt_web_generate', 'wgt_web_harness', 'wgt_web_model_free', 'wgt_web_profile'];
    w.async = Object.fromEntries(wait.map((n) => [n, WebAssembly.promising(ex[n])]));
    return w;
  }

  get u8() { return new Uint8Array(this.ex.memory.buffer); }
  bytes(p, n) { return this.u8.slice(p, p + n); }
  cstr(p) { p >>>= 0; const u8 = this.u8; let e = p; while (u8[e]) e++; return new TextDecoder().decode(u8.slice(p, e)); }
  newStr(s) {
    const b = new TextEncoder().encode(s);
    const p = this.ex.wgt_web_malloc(b.length + 1) >>> 0;
    this.u8.set(b, p);
    this.u8[p + b.length] = 0;
    return p;
  }
  message() { return this.cstr(this.ex.wgt_web_message()); }
  check(status, what) {
    if (status !== 0) throw new Error(`${what}: ${this.message()}`);
  }

  async init() { this.check(await this.async.wgt_web_init(), 'WebGPU'); return this.info(); }
  info() { return JSON.parse(this.cstr(this.ex.wgt_web_info())); }

  // Files the C code can open (models): bytes is a Uint8Array.
  putFile(path, bytes) { this.wasi.putFile(path, bytes); }
  removeFile(path) { this.wasi.removeFile(path); }

  // f32Weights: expand f16/bf16 weights to f32 (exact, twice the memory); undefined: on software
  // adapters without shader-f16 (SwiftShader), where unpacking f16 inside a kernel is very slow.
  async openModel(path, maxCtx = 0, f32Weights = undefined) {
    if (f32Weights === undefined) { const i = this.info(); f32Weights = i.is_cpu && !i.features['shader-f16']; }
    const p = this.newStr(path);
    try { this.check(await this.async.wgt_web_model_open(p, maxCtx, f32Weights ? 1 : 0), path); } finally { this.ex.wgt_web_free(p); }
    return this.modelInfo();
  }
  async freeModel() { await this.async.wgt_web_model_free(); }
  modelInfo() { return JSON.parse(this.cstr(this.ex.wgt_web_model_info())); }

  encode(text, flags = TOKENIZE_ADD_SPECIAL | TOKENIZE_PARSE_SPECIAL) {
    const p = this.newStr(text), out = this.ex.wgt_web_malloc(4) >>> 0;
    try {
      const n = this.ex.wgt_web_encode(p, flags, out);
      if (n < 0) throw new Error(`tokenizer: ${this.message()}`);
      const ids = new Int32Array(this.ex.memory.buffer, new DataView(this.ex.memory.buffer).getUint32(out, true), n).slice();
      this.ex.wgt_web_free(new DataView(this.ex.memory.buffer).getUint32(out, true));
      return Array.from(ids);
    } finally { this.ex.wgt_web_free(p); this.ex.wgt_web_free(out); }
  }

  // messages: [{role, content}]; the model's chat template with the generation prompt.
  chatTemplate(messages) {
    const n = messages.length, roles = this.ex.wgt_web_malloc(4 * n + 4) >>> 0, contents = this.ex.wgt_web_malloc(4 * n + 4) >>> 0;
    const strs = [];
    const dv = () => new DataView(this.ex.memory.buffer);
    messages.forEach((m, i) => {
      const r = this.newStr(m.role), c = this.newStr(m.content);
      strs.push(r, c);
      dv().setUint32(roles + 4 * i, r, true);
      dv().setUint32(contents + 4 * i, c, true);
    });
    try {
      const t = this.ex.wgt_web_chat_template(roles, contents, n) >>> 0;
      if (!t) throw new Error(`chat template: ${this.message()}`);
      const text = this.cstr(t);
      this.ex.wgt_web_free(t);
      return text;
    } finally { strs.forEach((p) => this.ex.wgt_web_free(p)); this.ex.wgt_web_free(roles); this.ex.wgt_web_free(contents); }
  }

  // Generate after ids; onToken(id, textBytes) per token (return true to stop). opts: the sampling
  // settings of `wgt generate` (temperature, topK, topP, minP, repeatPenalty, seed, ignoreEos) and
  // reset (forget the KV cache first; chat turns keep it), chat (the reply's text starts fresh;
  // otherwise it continues the prompt's, spaces at word starts as `wgt generate -p` prints them).
  // Resolves to the run's statistics.
  async generate(ids, n, opts = {}, onToken = () => false) {
    const p = this.ex.wgt_web_malloc(4 * Math.max(1, ids.length)) >>> 0;
    new Int32Array(this.ex.memory.buffer, p, ids.length).set(ids);
    this.onToken = onToken;
    try {
      const st = await this.async.wgt_web_generate(p, ids.length, n, opts.temperature ?? 0, opts.topK ?? 0,
        opts.topP ?? 0, opts.minP ?? 0, opts.repeatPenalty ?? 1, opts.seed ?? 1234, opts.ignoreEos ? 1 : 0,
        opts.reset === false ? 0 : 1, opts.chat ? 1 : 0);
      this.check(st, 'generate');
    } finally { this.onToken = null; this.ex.wgt_web_free(p); }
    return JSON.parse(this.cstr(this.ex.wgt_web_stats()));
  }

  // The op harness for the named ops (comma-separated; '' all), cases and dtypes as bit masks
  // (0: defaults). Lines go to stdout; resolves to the number of failed cases.
  async harness(names, cases = 0, dtypes = 0) {
    const p = this.newStr(names);
    try {
      const r = await this.async.wgt_web_harness(p, cases, dtypes);
      if (r < 0) throw new Error(`harness: ${this.message()}`);
      return r;
    } finally { this.ex.wgt_web_free(p); }
  }
}
