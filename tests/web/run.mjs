// Opens a page of the browser build in Debian's chromium (headless, --enable-unsafe-webgpu: its
// software adapter is SwiftShader), waits until document.title is "done" or "error", and prints a
// JSON object per line: {title, ids, summary, error, speed, decode_tok_s, decode_tok_s_each (per
// prompt), adapter, console}. The pages are served by Python's http.server from --root on a free
// port of 127.0.0.1. Several --page: one browser launch, each page in a fresh context (its own
// cache storage), one line each, in order; --timeout is per page.
//   node run.mjs --root build/web --page 'index.html?prompt_ids=1,2&n=8' [--page ...] [--timeout 300]
//                [--bytes NAME=FILE]   serve FILE's bytes at /NAME (e.g. a corrupt model)
// A page of nogpu:PATH or smallgpu:PATH runs in a simulated browser (SIMULATE below).
import { readFileSync } from 'node:fs';
import { serve, launch, waitDone } from './browser.mjs';

const args = process.argv.slice(2);
const opt = { timeout: 300, bytes: [], page: [] };
for (let i = 0; i < args.length; i += 2) {
  const k = args[i].replace(/^--/, ''), v = args[i + 1];
  if (k === 'bytes' || k === 'page') opt[k].push(v); else opt[k] = v;
}
if (!opt.root || !opt.page.length) { console.error('usage: node run.mjs --root DIR --page PATH [--page PATH]... [--timeout S] [--bytes NAME=FILE]'); process.exit(2); }

// Browsers the page must refuse, simulated before the page's scripts run (a path prefix):
//   nogpu:PATH     navigator.gpu undefined (a browser without WebGPU);
//   smallgpu:PATH  the device reports 1 MiB as its largest buffer and storage binding (an adapter
//                  too small for the model: the default model's largest tensor is 2 MiB).
const SIMULATE = {
  nogpu: () => { Object.defineProperty(Navigator.prototype, 'gpu', { get: () => undefined, configurable: true }); },
  smallgpu: () => {
    const real = Object.getOwnPropertyDescriptor(GPUDevice.prototype, 'limits').get;
    Object.defineProperty(GPUDevice.prototype, 'limits', { configurable: true, get() {
      const l = real.call(this), o = {};
      for (const k in l) o[k] = l[k];
      o.maxBufferSize = o.maxStorageBufferBindingSize = 1 << 20;
      return o;
    } });
  },
};

// One page in a context of its own (its own cache storage, as a fresh browser): the result object.
async function visit(browser, port, path) {
  const result = { console: [] };
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const m = path.match(/^(\w+):(.*)$/);
    if (m && SIMULATE[m[1]]) { await page.addInitScript(SIMULATE[m[1]]); path = m[2]; }
    page.on('console', (m) => result.console.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => result.console.push(`pageerror: ${e.message}`));
    for (const b of opt.bytes) {
      const [name, file] = b.split('=');
      const body = readFileSync(file);
      await page.route(`**/${name}`, (r) => r.fulfill({ status: 200, body, contentType: 'application/octet-stream' }));
    }
    await page.goto(`http://127.0.0.1:${port}/${path}`);
    Object.assign(result, await waitDone(page, Number(opt.timeout)));
    const text = async (sel) => ((await page.$(sel)) ? (await page.textContent(sel)) : null);
    result.ids = await text('#ids');
    result.summary = await text('#summary');
    result.error = await text('#error');
    result.speed = await text('#speed');
    result.decode_tok_s = await page.evaluate(() => { const e = document.getElementById('ids'); return e && e.dataset.decodeTokS ? Number(e.dataset.decodeTokS) : null; });
    result.decode_tok_s_each = await page.evaluate(() => { const e = document.getElementById('ids'); return e && e.dataset.decodeTokSEach ? e.dataset.decodeTokSEach.split(' ').map(Number) : null; });
    result.adapter = await page.evaluate(async () => { const a = navigator.gpu && await navigator.gpu.requestAdapter(); return a && a.info ? `${a.info.vendor} ${a.info.architecture} ${a.info.device} ${a.info.description}`.trim() : null; });
    result.log = await text('#log');
  } catch (e) {
    result.title = 'failed';
    result.error = e.message;
  } finally {
    await context.close();
  }
  return result;
}

const browser = await launch();
const server = await serve(opt.root);
try {
  for (const path of opt.page) console.log(JSON.stringify(await visit(browser, server.port, path)));
} finally {
  await browser.close();
  server.proc.kill();
}
