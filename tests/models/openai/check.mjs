// The official `openai` npm client (pinned by package-lock.json) against a running `wgt serve`:
// completions and chat, whole and streamed, give the texts `wgt generate` gave for the same greedy
// request (the oracle written by test_serve.sh); seeds, stop strings and max_tokens behave as
// documented; chat logprobs, whole and streamed, agree and make the reply; 8 concurrent streams give
// what the same requests give one at a time; the server's
// errors reach the caller as the client's error classes (401, 404, 400, an error event mid-stream).
// With "limits", against a server started with --timeout 2: a 504 is an InternalServerError, and a
// stream cut by the time limit throws an APIError from the loop that reads it.
// Usage: node check.mjs main|limits PORT KEY ORACLE.json  (one line per failed check; exit 1 on any)
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const [mode, port, key, oraclePath] = process.argv.slice(2);
const version = JSON.parse(readFileSync(new URL("node_modules/openai/package.json", import.meta.url), "utf8")).version;
const oracle = JSON.parse(readFileSync(oraclePath, "utf8"));
const baseURL = `http://127.0.0.1:${port}/v1`;
const client = new OpenAI({ baseURL, apiKey: key || "none", maxRetries: 0, timeout: 600_000 });
const model = "bible-llama";
const n = oracle.n;
let failures = 0;
const check = (cond, what) => {
  if (!cond) {
    failures++;
    console.log("FAIL:", what);
  }
  return cond;
};
const show = (x) => JSON.stringify(x);

async function completion(prompt, extra = {}) {
  const r = await client.completions.create({ model, prompt, max_tokens: n, temperature: 0, ...extra });
  return r;
}
async function completionStream(prompt, extra = {}) {
  const s = await client.completions.create({ model, prompt, max_tokens: n, temperature: 0, stream: true, ...extra });
  let text = "", chunks = 0;
  for await (const c of s) {
    if (c.choices.length) text += c.choices[0].text, chunks++;
  }
  return { text, chunks };
}
async function chatStream(messages, extra = {}) {
  const s = await client.chat.completions.create({ model, messages, max_tokens: n, temperature: 0, stream: true, ...extra });
  let text = "", role = null;
  for await (const c of s) {
    if (!c.choices.length) continue;
    role ??= c.choices[0].delta.role;
    text += c.choices[0].delta.content ?? "";
  }
  return { text, role };
}
// The error the call throws (null when it does not).
async function thrown(f) {
  try {
    await f();
    return null;
  } catch (e) {
    return e;
  }
}

async function limits() {
  const long = { max_tokens: 100000, ignore_eos: true };
  let e = await thrown(() => completion(oracle.prompts[0], long));
  check(e instanceof OpenAI.InternalServerError && e.status === 504 && /time limit/.test(e.message), `past --timeout: ${e}`);
  let got = "";
  e = await thrown(async () => {
    const s = await client.completions.create({ model, prompt: oracle.prompts[0], stream: true, ...long });
    for await (const c of s) if (c.choices.length) got += c.choices[0].text;
  });
  check(e instanceof OpenAI.APIError && /time limit/.test(e.message) && got.length > 0,
        `a stream past --timeout: ${e} after ${show(got.slice(0, 40))}`);
}
if (mode === "limits") {
  await limits();
  console.log(`serve limits (openai ${version}): ${failures} failed`);
  process.exit(failures ? 1 : 0);
}

// ---- models
const models = await client.models.list();
check(models.data.length === 1 && models.data[0].id === model, `models.list: ${show(models.data)}`);

// ---- greedy completions and chat equal wgt generate's (streamed: in the concurrent block below)
const p0 = oracle.prompts[0];
const full = oracle.generate[p0];
const r0 = await completion(p0);
check(r0.choices[0].text === full, `completion of ${show(p0)}: ${show(r0.choices[0].text)}, wgt generate: ${show(full)}`);
check(r0.object === "text_completion" && ["stop", "length"].includes(r0.choices[0].finish_reason), `completion shape ${show(r0)}`);
check(r0.usage.total_tokens === r0.usage.prompt_tokens + r0.usage.completion_tokens && r0.usage.completion_tokens <= n,
      `usage ${show(r0.usage)}`);
const messages = [{ role: "user", content: oracle.chat_message }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: n, temperature: 0 });
check(chat.object === "chat.completion" && chat.choices[0].message.role === "assistant" &&
      chat.choices[0].message.content === oracle.chat_generate,
      `chat: ${show(chat.choices[0].message)}, wgt generate: ${show(oracle.chat_generate)}`);

// ---- a seed gives wgt generate's draw; stop strings; max_tokens
const sampled = { temperature: 0.9, top_k: 40, seed: 5 }; // top_k: a field outside OpenAI's, sent through
const a = (await completion(p0, sampled)).choices[0].text;
check(a === oracle.sampled, `seed 5: ${show(a)}, wgt generate -s 5: ${show(oracle.sampled)}`);
const words = full.split(" ").filter((w) => w);
if (check(words.length >= 3, `greedy text too short for the stop test: ${show(full)}`)) {
  const stop = " " + words[2];
  const cut = full.slice(0, full.indexOf(stop));
  const r = await completion(p0, { stop: [stop, "zzzz-never"] });
  check(r.choices[0].text === cut && r.choices[0].finish_reason === "stop", `stop ${show(stop)}: ${show(r.choices[0])}`);
}
const one = await completion(p0, { max_tokens: 1 });
check(one.usage.completion_tokens === 1 && one.choices[0].finish_reason === "length", `max_tokens 1: ${show(one)}`);

// ---- 8 concurrent streams (completions and chat, some alike) equal the same requests alone: the
// texts wgt generate gave, or the server's answer to the request on its own
const m2 = [{ role: "user", content: "The LORD is my shepherd;" }];
const reqs = [{ prompt: p0, want: full }, { prompt: oracle.prompts[1], want: oracle.generate[oracle.prompts[1]] },
              { prompt: "And God said, Let there be" }, { chat: messages, want: oracle.chat_generate },
              { prompt: "Blessed are the meek:" }, { chat: m2 }, { prompt: p0, want: full },
              { chat: messages, want: oracle.chat_generate }];
for (const r of reqs)
  if (r.want === undefined)
    r.want = r.chat ? (await client.chat.completions.create({ model, messages: r.chat, max_tokens: n, temperature: 0 }))
                          .choices[0].message.content
                    : (await completion(r.prompt)).choices[0].text;
const together = await Promise.all(reqs.map((r) => (r.chat ? chatStream(r.chat) : completionStream(r.prompt))));
reqs.forEach((r, i) => check(together[i].text === r.want && (!r.chat || together[i].role === "assistant") &&
                             (r.chat || together[i].chunks >= 2),
                             `concurrent stream ${i}: ${show(together[i])}, alone: ${show(r.want)}`));
check(new Set(reqs.map((r) => r.want)).size >= 5, `too few different texts to tell the streams apart: ${show(reqs)}`);

// ---- chat logprobs through the client, whole and streamed: each step's drawn (greedy) token is its
// best, the pieces make the reply (SentencePiece drops the reply's leading space), streamed = whole
const lpw = await client.chat.completions.create({ model, messages, max_tokens: n, temperature: 0, logprobs: true,
                                                   top_logprobs: 2 });
const lpc = lpw.choices[0].logprobs?.content ?? [];
check(lpc.length > 0 && lpc.map((c) => c.token).join("").replace(/^ /, "") === lpw.choices[0].message.content &&
      lpc.every((c) => c.logprob <= 0 && c.top_logprobs.length === 2 && c.top_logprobs[0].token === c.token &&
                       c.top_logprobs[0].logprob >= c.top_logprobs[1].logprob),
      `chat logprobs: ${show(lpw.choices[0])}`);
const lps = await client.chat.completions.create({ model, messages, max_tokens: n, temperature: 0, logprobs: true,
                                                   top_logprobs: 2, stream: true });
const streamedLp = [];
for await (const c of lps) if (c.choices.length && c.choices[0].logprobs?.content) streamedLp.push(...c.choices[0].logprobs.content);
// the same tokens; the values within 1e-4 (the second request reuses the first one's cached prompt,
// computed in other chunks: float sums in another order)
const near = (x, y) => x.token === y.token && Math.abs(x.logprob - y.logprob) < 1e-4;
check(streamedLp.length === lpc.length && streamedLp.every((c, i) => near(c, lpc[i]) &&
        c.top_logprobs.every((t, k) => near(t, lpc[i].top_logprobs[k]))),
      `streamed chat logprobs ${show(streamedLp)} != whole ${show(lpc)}`);

// ---- errors are the client's error classes, with the server's OpenAI-style message
let e = await thrown(() => new OpenAI({ baseURL, apiKey: key + "x", maxRetries: 0 }).completions.create({ model, prompt: p0 }));
check(e instanceof OpenAI.AuthenticationError && e.status === 401 && e.error?.message, `a wrong key: ${e}`);
e = await thrown(() => client.completions.create({ model: "gpt-4", prompt: p0 }));
check(e instanceof OpenAI.NotFoundError && e.status === 404 && /gpt-4/.test(e.message), `an unknown model: ${e}`);
e = await thrown(() => client.completions.create({ model, prompt: p0, max_tokens: "8" }));
check(e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "max_tokens", `max_tokens a string: ${e} ${e?.param}`);
e = await thrown(() => client.chat.completions.create({ model, messages: [{ role: "wizard", content: "x" }] }));
check(e instanceof OpenAI.BadRequestError && e.status === 400, `an unknown role: ${e}`);
e = await thrown(() => client.completions.create({ model, prompt: Array(oracle.ctx + 1).fill(1) }));
check(e instanceof OpenAI.BadRequestError && e.code === "context_length_exceeded" && e.message.includes(String(oracle.ctx)),
      `an over-long prompt: ${e} (code ${e?.code})`);
e = await thrown(() => completionStream(p0, { temperature: "hot" }));
check(e instanceof OpenAI.BadRequestError && e.status === 400, `a streamed request with a bad temperature: ${e}`);

// ---- still serving, and the same text
const end = (await completion(p0, { max_tokens: 2 })).choices[0].text;
check(end.length > 0 && full.startsWith(end), `the same text at the end: ${show(end)}`);
console.log(`serve (openai ${version}): ${failures} failed`);
process.exit(failures ? 1 : 0);
