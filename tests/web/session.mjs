// One browser session through the page's interactive paths (test_web_session.sh checks the result):
//  1. the automation URL loads --model by URL and generates (the model is fetched: requests counted);
//  2. a reload of the same URL: the model comes from the browser's cache storage (no request);
//  3. a text prompt generated with the page's Generate button, greedy: every change of the output
//     is recorded with its time, so the caller sees whether text appeared before the end;
//  4. chat mode: each --chat message sent in turn (one conversation, the KV cache kept);
//  5. the file picker: --model chosen from disk, then the text prompt generated again;
//  6. drag and drop: a File of --model's bytes (fetched in the page, named dropped.gguf) dropped on
//     the page (dragover, then drop, with a DataTransfer), then the text prompt generated again.
// Prints a JSON object: {load: {title, ids, error, requests, statuses}, reload: {...},
// stream: {changes: [{t, text}], final, t_end, error}, chat: {replies, error},
// file: {statuses, error, final}, drop: {over, statuses, error, final}, console,
// seconds: {launched, load, reload, stream, chat, file, drop, closed} (since the start, at the end of each)}.
//   node session.mjs --root build/web --model models/bible-llama.gguf --text 'And God said'
//                    --chat 'Who made the light?' --chat 'And the waters?' [--n 8] [--timeout 300]
import { serve, launch, waitDone } from './browser.mjs';

const args = process.argv.slice(2);
const opt = { timeout: 300, n: 8, chat: [] };
for (let i = 0; i < args.length; i += 2) {
  const k = args[i].replace(/^--/, ''), v = args[i + 1];
  if (k === 'chat') opt.chat.push(v); else opt[k] = v;
}
if (!opt.root || !opt.model || !opt.text) {
  console.error("usage: node session.mjs --root DIR --model PATH --text TEXT [--chat MSG]... [--n N] [--timeout S]");
  process.exit(2);
}
const timeout = Number(opt.timeout) * 1000;

// Before the page's scripts: record every text #status shows, and every change of #output with
// its time (performance.now(), the page's clock).
function recorder() {
  window.__statuses = [];
  window.__changes = [];
  document.addEventListener('DOMContentLoaded', () => {
    const st = document.getElementById('status'), out = document.getElementById('output');
    new MutationObserver(() => window.__statuses.push(st.textContent)).observe(st, { childList: true, characterData: true, subtree: true });
    new MutationObserver(() => window.__changes.push({ t: performance.now(), text: out.textContent }))
      .observe(out, { childList: true, characterData: true, subtree: true });
  });
}

// Clicks Generate with the prompt box set to text; resolves when the run has ended (Generate
// enabled again, #speed holding the final statistics) with the end's time, or the page's error.
async function generate(page, text) {
  await page.fill('#prompt', text);
  await page.evaluate(() => { document.getElementById('speed').textContent = ''; document.getElementById('error').textContent = ''; });
  await page.click('#generate');
  await page.waitForFunction(() => {
    const done = / generated at /.test(document.getElementById('speed').textContent) && !document.getElementById('generate').disabled;
    return done || document.getElementById('error').textContent !== '';
  }, null, { timeout, polling: 50 });
  return page.evaluate(() => ({ t_end: performance.now(), error: document.getElementById('error').textContent }));
}

const browser = await launch();
const server = await serve(opt.root);
const result = { console: [], seconds: {} };
const t0 = Date.now(), lap = (k) => { result.seconds[k] = (Date.now() - t0) / 1000; };
try {
  const page = await browser.newPage();
  page.on('console', (m) => result.console.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => result.console.push(`pageerror: ${e.message}`));
  await page.addInitScript(recorder);
  let requests = 0;
  page.on('request', (r) => { if (new URL(r.url()).pathname.endsWith('/' + opt.model)) requests++; });
  const url = `http://127.0.0.1:${server.port}/index.html?model=${encodeURIComponent(opt.model)}&prompt_ids=1&n=2&temp=0`;
  const visit = async (go) => {
    requests = 0;
    await go();
    const r = await waitDone(page, Number(opt.timeout));
    r.ids = await page.textContent('#ids');
    r.error = await page.textContent('#error');
    r.requests = requests;
    r.statuses = await page.evaluate(() => window.__statuses);
    return r;
  };
  lap('launched');
  result.load = await visit(() => page.goto(url));
  lap('load');
  result.reload = await visit(() => page.reload());
  lap('reload');
  if (result.reload.title === 'done') {
    // streaming: greedy, no chat, n tokens
    await page.fill('#n', String(opt.n));
    await page.fill('#temp', '0');
    await page.setChecked('#chat', false);
    await page.evaluate(() => { window.__changes = []; });
    const end = await generate(page, opt.text);
    result.stream = { ...end, changes: await page.evaluate(() => window.__changes), final: await page.textContent('#output') };
    lap('stream');
    // chat: one conversation
    await page.setChecked('#chat', true);
    await page.click('#new-chat');
    result.chat = { replies: [], error: '' };
    for (const msg of opt.chat) {
      const r = await generate(page, msg);
      if (r.error) { result.chat.error = r.error; break; }
      result.chat.replies.push(await page.evaluate(() => {
        const spans = document.querySelectorAll('#output > span');
        return spans.length ? spans[spans.length - 1].textContent : null;
      }));
    }
    lap('chat');
    // the file picker: the same model chosen from disk (a fresh load), then the streaming prompt again
    await page.setChecked('#chat', false);
    await page.evaluate(() => { window.__statuses = []; document.getElementById('error').textContent = ''; });
    const base = opt.model.split('/').pop();
    await page.setInputFiles('#model-file', opt.model);
    await page.waitForFunction((b) => window.__statuses.some((t) => t.includes(`${b} loaded`)) ||
      document.getElementById('error').textContent !== '', base, { timeout, polling: 100 });
    result.file = { statuses: await page.evaluate(() => window.__statuses), error: await page.textContent('#error') };
    if (!result.file.error) {
      await page.evaluate(() => { document.getElementById('output').textContent = ''; }); // no text left from before
      const end = await generate(page, opt.text);
      result.file.error = end.error;
      result.file.final = await page.textContent('#output');
    }
    lap('file');
    // drag and drop: the model's bytes as a File in a DataTransfer, dragged over the page (the drop
    // zone shows it) and dropped; a name of its own, so the statuses tell this load from the last
    await page.evaluate(() => { window.__statuses = []; document.getElementById('error').textContent = ''; });
    const dt = await page.evaluateHandle(async (url) => {
      const bytes = await (await fetch(url, { cache: 'no-store' })).arrayBuffer();
      const d = new DataTransfer();
      d.items.add(new File([bytes], 'dropped.gguf', { type: 'application/octet-stream' }));
      return d;
    }, opt.model);
    await page.dispatchEvent('body', 'dragover', { dataTransfer: dt });
    result.drop = { over: await page.evaluate(() => document.getElementById('drop').classList.contains('over')) };
    await page.dispatchEvent('body', 'drop', { dataTransfer: dt });
    await page.waitForFunction(() => window.__statuses.some((t) => t.includes('dropped.gguf loaded')) ||
      document.getElementById('error').textContent !== '', null, { timeout, polling: 100 });
    result.drop.statuses = await page.evaluate(() => window.__statuses);
    result.drop.error = await page.textContent('#error');
    if (!result.drop.error) {
      await page.evaluate(() => { document.getElementById('output').textContent = ''; });
      const end = await generate(page, opt.text);
      result.drop.error = end.error;
      result.drop.final = await page.textContent('#output');
    }
    lap('drop');
  }
} catch (e) {
  result.error = e.message;
} finally {
  await browser.close();
  lap('closed');
  server.proc.kill();
}
console.log(JSON.stringify(result));
