// The op harness page: runs testkit/harness (the same table as `wgt ops --check`) in the browser and
// ends with "N passed, N failed" in <pre id="summary">, then document.title = done | error.
import { Wgt } from './wgt.js';

// A subset sized for a software adapter (SwiftShader compiles each kernel in seconds and runs
// barrier-heavy ones slowly), f32 only by default (?dtypes=MASK: bit per wgt_dtype): ops of the
// kernel families the default model uses (elementwise, reductions, matmul, norms, softmax,
// attention, rope, embedding, the fused decoder ops) and some indexing and shape ops.
export const DEFAULT_OPS = ['add', 'mul', 'exp', 'silu', 'where', 'sum', 'softmax', 'rms_norm', 'add_rms_norm', 'matmul',
  'linear', 'sdpa', 'rope', 'embedding', 'gather', 'cat', 'swiglu'];

const log = document.getElementById('log');
const line = (s) => { log.textContent += s + '\n'; };

async function main() {
  const q = new URLSearchParams(location.search);
  const ops = q.get('ops') || DEFAULT_OPS.join(',');
  const wgt = await Wgt.load({ stdout: line, stderr: (s) => line('stderr: ' + s) });
  const info = await wgt.init();
  document.getElementById('adapter').textContent =
    `adapter: ${info.name} (${info.driver || info.vendor}); shader-f16 ${info.features['shader-f16'] ? 'yes' : 'no'}, ` +
    `subgroups ${info.features.subgroups ? 'yes' : 'no'}`;
  const t0 = performance.now();
  await wgt.harness(ops === '*' ? '' : ops, Number(q.get('cases') || 0), Number(q.get('dtypes') || (q.has('ops') ? 0 : 1)));
  const m = log.textContent.match(/^(\d+) passed, (\d+) failed$/m);
  if (!m) throw new Error('the harness printed no summary line');
  document.getElementById('summary').textContent = `${m[0]} (${((performance.now() - t0) / 1000).toFixed(1)} s)`;
  document.title = 'done';
}

main().catch((e) => {
  document.getElementById('summary').textContent = `error: ${e.message}`;
  document.title = 'error';
});
