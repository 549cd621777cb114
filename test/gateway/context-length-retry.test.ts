import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createEngineServer } from '../../src/emulator/server.ts';
import { isContextLengthRefusal } from '../../src/gateway/forward.ts';
import { metricValues } from '../../src/gateway/prometheus-text.ts';
import type { Gateway } from '../../src/gateway/server.ts';
import { complete, gatewayMetric, startGateway } from './helpers.ts';

// A pool of mixed GPUs: a replica that refuses a prompt as too long for its KV is not the fleet's last
// word when a larger one is present. Before, the gateway relayed the small replica's 400.

const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

/** A `preble engine` replica of `kvTokens` in `role` (colocated by default), stopped after the file. */
async function engine(kvTokens: number, role: 'mixed' | 'prefill' | 'decode' = 'mixed') {
  const server = createEngineServer({ timeScale: 1000, role, kvTokens });
  const { url } = await server.listen(0, '127.0.0.1');
  closers.push(() => server.close(1000));
  return url;
}

async function gateway(
  replicas: { url: string; kvTokens: number }[],
): Promise<{ gateway: Gateway; url: string }> {
  const g = await startGateway(replicas, {
    timeScale: 1000,
    retries: { attempts: 2, backoffSeconds: 0.001 },
  });
  closers.push(() => g.gateway.close());
  return g;
}

// 'chars' tokens: one per character, so 2,000 characters need more than 1,000 KV tokens.
const long = 'x'.repeat(2_000);

test('a prompt too long for the replica routed to is retried on a larger one of the pool', async () => {
  const small = await engine(1_000);
  const large = await engine(20_000);
  // Round robin sends the first request to replica 0, the small one.
  const g = await gateway([
    { url: small, kvTokens: 1_000 },
    { url: large, kvTokens: 20_000 },
  ]);
  const answer = await complete(g.url, { prompt: long, max_tokens: 4 });
  assert.equal(answer.status, 200, JSON.stringify(answer.json));
  assert.equal(
    await gatewayMetric(g.gateway, 'preble_upstream_attempts_total', { outcome: 'context_length' }),
    1,
  );
});

test("unconfigured sizes: the gateway reads each replica's max_model_len from its /v1/models", async () => {
  const small = await engine(1_000);
  const large = await engine(20_000);
  // Neither size nor model configured: discovery lists each engine's model with its max_model_len.
  const g = await startGateway([small, large], {
    timeScale: 1000,
    retries: { attempts: 2, backoffSeconds: 0.001 },
  });
  closers.push(() => g.gateway.close());
  const answer = await complete(g.url, { prompt: long, max_tokens: 4 });
  assert.equal(answer.status, 200, JSON.stringify(answer.json));
  assert.equal(
    await gatewayMetric(g.gateway, 'preble_upstream_attempts_total', { outcome: 'context_length' }),
    1,
  );
});

test('too long for every replica it may still try: one 400 context_length_exceeded, the replica saying why', async () => {
  const sizes = [1_000, 1_200, 1_500];
  const urls = await Promise.all(sizes.map((kv) => engine(kv)));
  // One retry: the 1,000 and 1,200-token replicas refuse it, and no try is left for the 1,500 one.
  const g = await startGateway(
    urls.map((url, i) => ({ url, kvTokens: sizes[i]! })),
    { timeScale: 1000, retries: { attempts: 1, backoffSeconds: 0.001 } },
  );
  closers.push(() => g.gateway.close());
  const answer = await complete(g.url, { prompt: long, max_tokens: 4 });
  assert.equal(answer.status, 400);
  const error = answer.json['error'] as { code: string; type: string; message: string };
  assert.equal(error.code, 'context_length_exceeded');
  assert.equal(error.type, 'invalid_request_error');
  assert.match(error.message, /KV tokens/);
  assert.equal(
    await gatewayMetric(g.gateway, 'preble_upstream_attempts_total', { outcome: 'context_length' }),
    2,
  );
});

test("the replicas' wordings of a context-length refusal are recognised", () => {
  const yes = [
    '{"error":{"message":"needs 2004 KV tokens","code":"context_length_exceeded"}}',
    '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}',
    '{"object":"error","message":"This model\'s maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","code":400}',
    '{"object":"error","message":"The input (5000 tokens) is longer than the model\'s context length (4096 tokens).","code":400}',
  ];
  for (const text of yes) assert.ok(isContextLengthRefusal(text), text);
  assert.ok(
    !isContextLengthRefusal('{"error":{"message":"max_tokens must be at least 1","code":"invalid_value"}}'),
  );
});

test('disaggregated: a prefill replica too small for the prompt hands the request to a larger prefill replica', async () => {
  const smallPrefill = await engine(1_000, 'prefill');
  const largePrefill = await engine(20_000, 'prefill');
  const decode = await engine(20_000, 'decode');
  const g = await startGateway(
    [
      { url: smallPrefill, role: 'prefill', kvTokens: 1_000 },
      { url: largePrefill, role: 'prefill', kvTokens: 20_000 },
      { url: decode, role: 'decode', kvTokens: 20_000 },
    ],
    { timeScale: 1000, drainSeconds: 1, retries: { attempts: 2, backoffSeconds: 0.001 } },
    'distserve',
  );
  closers.push(() => g.gateway.close());
  const answer = await complete(g.url, { prompt: long, max_tokens: 4 });
  assert.equal(answer.status, 200, JSON.stringify(answer.json));
  assert.equal(answer.headers.get('x-preble-prefill-replica'), largePrefill);
  assert.equal(
    await gatewayMetric(g.gateway, 'preble_upstream_attempts_total', { outcome: 'context_length' }),
    1,
  );
});

async function disaggregated(policy: string, decodeSizes: number[], dialect?: 'sglang') {
  const prefill = await engine(20_000, 'prefill');
  const decodes = [];
  for (const size of decodeSizes) decodes.push(await engine(size, 'decode'));
  const g = await startGateway(
    [
      { url: prefill, role: 'prefill' as const, kvTokens: 20_000 },
      ...decodes.map((url, i) => ({ url, role: 'decode' as const, kvTokens: decodeSizes[i]! })),
    ].map((r) => (dialect === undefined ? r : { ...r, dialect })),
    { timeScale: 1000, drainSeconds: 1, retries: { attempts: 2, backoffSeconds: 0.001 } },
    policy,
  );
  closers.push(() => g.gateway.close());
  return { ...g, prefill, decodes };
}

/** Prompt tokens a `preble engine` replica processed (its vLLM-style counter). */
async function promptTokensOn(url: string): Promise<number> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
  return metricValues(text, ['vllm:prompt_tokens_total']).get('vllm:prompt_tokens_total') ?? 0;
}

test('disaggregated: a decode replica too small for the request hands it to a larger one, which pulls the same KV', async () => {
  // DistServe picks the decode replica at KV-ready, the least busy from the first: a small one. The
  // retry avoids both small ones (the second would refuse too) and needs no second prefill.
  const g = await disaggregated('distserve', [1_000, 1_000, 20_000]);
  const answer = await complete(g.url, { prompt: long, max_tokens: 4 });
  assert.equal(answer.status, 200, JSON.stringify(answer.json));
  assert.equal(answer.headers.get('x-preble-replica'), g.decodes[2]);
  assert.equal(
    await gatewayMetric(g.gateway, 'preble_upstream_attempts_total', { outcome: 'context_length' }),
    1,
  );
  assert.equal(await gatewayMetric(g.gateway, 'preble_pd_leg_retries_total', { leg: 'prefill' }), 0);
});

test('disaggregated: a decode replica named at routing and known too small: routed again before any prefill, off the small ones', async () => {
  // Splitwise picks the (prompt, token) pair at arrival, the shortest token queue first: the small one.
  const g = await disaggregated('splitwise', [1_000, 20_000]);
  const answer = await complete(g.url, { prompt: long, max_tokens: 4 });
  assert.equal(answer.status, 200, JSON.stringify(answer.json));
  assert.equal(answer.headers.get('x-preble-replica'), g.decodes[1]);
  // Its size (kvTokens 1,000) says it would refuse 2,000 + 4 tokens: nothing is sent to it, and the
  // prefill runs once (before, it ran, the small replica refused, and it ran again for the large one).
  assert.equal(
    await gatewayMetric(g.gateway, 'preble_upstream_attempts_total', { outcome: 'context_length' }),
    0,
  );
  assert.equal(await promptTokensOn(g.prefill), long.length, 'one prefill');
  assert.equal(await promptTokensOn(g.decodes[0]!), 0, 'nothing sent to the small decode replica');
  assert.equal(await gatewayMetric(g.gateway, 'preble_pd_leg_retries_total', { leg: 'decode' }), 0);
});

test('disaggregated, SGLang-style (both legs at once): a decode replica too small, the request routed again off every one no larger', async () => {
  const g = await disaggregated('distserve', [1_000, 1_000, 20_000], 'sglang');
  const answer = await complete(g.url, { prompt: long, max_tokens: 4 });
  assert.equal(answer.status, 200, JSON.stringify(answer.json));
  assert.equal(answer.headers.get('x-preble-replica'), g.decodes[2]);
  // One refusal: the retry avoids the other small decode replica too (before, it was tried next).
  assert.equal(
    await gatewayMetric(g.gateway, 'preble_upstream_attempts_total', { outcome: 'context_length' }),
    1,
  );
});
