// What the page drivers (run.mjs, session.mjs) share: Python's http.server on a free port of
// 127.0.0.1 serving a folder, and Debian's chromium started headless through playwright-core with
// --enable-unsafe-webgpu (its software adapter is SwiftShader; see README, Browser).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

export function serve(root) {
  return new Promise((resolve, reject) => {
    const p = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', root], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const onData = (d) => {
      out += d;
      const m = out.match(/port (\d+)/);
      if (m) resolve({ proc: p, port: Number(m[1]) });
    };
    p.stdout.on('data', onData);
    p.stderr.on('data', () => {});
    p.on('exit', (c) => reject(new Error(`http.server exited (${c}): ${out}`)));
  });
}

// Debian's /usr/bin/chromium is a shell wrapper; playwright starts the binary itself. Exits 77
// (the suite's SKIP) when there is none.
export async function launch() {
  const exe = ['/usr/lib/chromium/chromium', '/usr/bin/chromium'].find((p) => existsSync(p));
  if (!exe) { console.log('SKIP: no chromium (Debian package chromium; make deps installs it)'); process.exit(77); }
  return chromium.launch({ executablePath: exe, headless: true, args: ['--enable-unsafe-webgpu', '--no-sandbox'] });
}

// Waits until the page's title is "done" or "error" (the automation's end): the title, or
// "timeout" with the message.
export async function waitDone(page, seconds) {
  try {
    await page.waitForFunction(() => document.title === 'done' || document.title === 'error', null,
      { timeout: seconds * 1000, polling: 200 });
    return { title: await page.title() };
  } catch (e) {
    return { title: 'timeout', timeout: e.message };
  }
}
