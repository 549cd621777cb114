import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { benchPrompt } from '../../src/bench/gateway-load.ts';
import { loadHfTokenizer } from '../../src/text/hf-tokenizer.ts';
import { loadPooledHfTokenizer } from '../../src/text/hf-tokenizer-pool.ts';
import { complete, type Engine, MODEL, startEngine, startGateway } from './helpers.ts';

const fixture = fileURLToPath(new URL('../fixtures/hf-tokenizer', import.meta.url));
const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});
async function engine(): Promise<Engine> {
  const e = await startEngine();
  closers.push(() => e.server.close(0));
  return e;
}

test('hf:PATH: the gateway routes and limits on the tokenizer.json tokens, not on characters', async () => {
  const e = await engine();
  const tokenizer = await loadHfTokenizer(fixture);
  // "hello world " is 12 characters but 3 tokens of the fixture's BPE (hello, Ġworld, Ġ) + BOS.
  const prompt = 'hello world '.repeat(10);
  const tokens = (await tokenizer.tokenize({ kind: 'completions', prompt })).length;
  assert.ok(tokens < prompt.length / 2, `${tokens} tokens for ${prompt.length} characters`);
  const { gateway, url } = await startGateway([e.url], { tokenizer, limits: { promptTokens: tokens } }, 'e2');
  closers.push(() => gateway.close());
  assert.equal(
    (await complete(url, { prompt })).status,
    200,
    'within the limit in tokens, though not in characters',
  );
  assert.equal((await complete(url, { prompt: `${prompt}hello` })).status, 400);
});

test('hf:PATH on worker threads: e2 keeps a shared prefix on one replica, limits count the same tokens, and the gateway stops the threads', async () => {
  const [a, b] = [await engine(), await engine()];
  const inline = await loadHfTokenizer(fixture);
  // Every prompt goes to the threads.
  const tokenizer = await loadPooledHfTokenizer(fixture, { threads: 2, inlineBelowChars: 0 });
  closers.push(() => tokenizer.close());
  const system = benchPrompt(3000);
  const prompt = (i: number) => `${system} question ${i}?`;
  const tokens = (await inline.tokenize({ kind: 'completions', prompt: prompt(0) })).length;
  const { gateway, url } = await startGateway(
    [a.url, b.url],
    { tokenizer, limits: { promptTokens: tokens } },
    'e2',
  );
  closers.push(() => gateway.close());
  const where = new Set<string>();
  for (let i = 0; i < 6; i++) {
    const r = await complete(url, { prompt: prompt(i) });
    assert.equal(r.status, 200);
    where.add(r.headers.get('x-preble-replica')!);
  }
  assert.equal(where.size, 1, 'requests sharing a 3,000-character prefix stay on one replica');
  const long = await complete(url, { prompt: `${prompt(0)} hello` });
  assert.equal(long.status, 400);
  const counted = (await inline.tokenize({ kind: 'completions', prompt: `${prompt(0)} hello` })).length;
  assert.match((long.json['error'] as { message: string }).message, new RegExp(`is ${counted} tokens`));
  assert.ok(tokenizer.offloaded >= 7, `${tokenizer.offloaded} prompts encoded on the threads`);
  assert.equal(tokenizer.liveThreads, 2);
  await gateway.close();
  assert.equal(tokenizer.liveThreads, 0, 'closing the gateway stops the tokenizer threads');
});

test('backend: the gateway asks a replica for its token ids (chats rendered by the replica), and answers 503 when none can', async () => {
  const e = await engine();
  const { gateway, url } = await startGateway(
    [e.url],
    { tokenizer: 'backend', limits: { promptTokens: 60 } },
    'e2',
  );
  closers.push(() => gateway.close());
  assert.equal((await complete(url, { prompt: 'x'.repeat(60) })).status, 200);
  const long = await complete(url, { prompt: 'x'.repeat(61) });
  assert.equal(long.status, 400);
  assert.match((long.json['error'] as { message: string }).message, /61 tokens/);
  const chat = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
  });
  assert.equal(chat.status, 200);
  await chat.json();
  await e.server.close(0);
  const down = await complete(url, { prompt: 'hello' });
  assert.equal(down.status, 503);
  assert.equal((down.json['error'] as { code: string }).code, 'service_unavailable');
});
