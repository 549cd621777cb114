/**
 * Integration: two real llama-server replicas of different context sizes behind the gateway, given by
 * URL alone. llama-server lists each slot's context (`meta.n_ctx`) in /v1/models; a prompt longer than
 * the small replica's is refused there (400 `exceed_context_size_error`) and served by the larger one.
 * Run by `npm run test:real`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { costModelPreset } from '../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../src/core/policies/registry.ts';
import { createGateway, type Gateway } from '../src/gateway/server.ts';
import { ensureLlamaServer } from '../src/real/llama-build.ts';
import { cachedModel } from '../src/real/model-cache.ts';
import { type LlamaReplicas, startLlamaReplicas } from '../src/real/replicas.ts';
import { gatewayMetric } from '../test/gateway/helpers.ts';

const log = (line: string) => process.stderr.write(`${line}\n`);
const stops: (() => Promise<unknown>)[] = [];
let small: LlamaReplicas;
let large: LlamaReplicas;

before(async () => {
  const binary = await ensureLlamaServer({ onProgress: log });
  const model = await cachedModel('tiny', 0, log);
  const replica = async (ctx: number) => {
    const r = await startLlamaReplicas({
      binary,
      model,
      count: 1,
      threads: 1,
      slots: 1,
      ctx,
      cacheRamMiB: 0,
    });
    stops.push(() => r.stop());
    return r;
  };
  small = await replica(512);
  large = await replica(4096);
});
after(async () => {
  for (const stop of stops.reverse()) await stop();
});

test('a prompt longer than one llama-server slot holds goes to the replica with the longer context', async () => {
  const gateway: Gateway = createGateway({
    createPolicy: () =>
      createGlobalPolicy('round-robin', { costModel: costModelPreset('llamacpp-small-cpu'), seed: 0 }),
    // Round robin tries the small one first.
    replicas: [small.urls[0]!, large.urls[0]!].map((url) => ({ url, dialect: 'llamacpp' as const })),
    // One size for both, as a gateway configured with one: each replica's /v1/models says less.
    replicaKvTokens: 4096,
    retries: { attempts: 2, backoffSeconds: 0.01 },
    logLevel: 'silent',
  });
  stops.push(() => gateway.close());
  const url = await gateway.listen(0, '127.0.0.1');
  const models = (await fetch(`${url}/v1/models`).then((r) => r.json())) as { data: { id: string }[] };
  // About 1,200 tokens: more than the small replica's 512, less than the large one's 4,096.
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: models.data[0]!.id, prompt: 'hello world '.repeat(100), max_tokens: 4 }),
  });
  const body = await res.text();
  // Before: the small replica's 400 reached the client (the gateway knew no larger replica).
  assert.equal(res.status, 200, body);
  assert.equal(res.headers.get('x-preble-replica'), large.urls[0]);
  assert.equal(
    await gatewayMetric(gateway, 'preble_upstream_attempts_total', { outcome: 'context_length' }),
    1,
  );
});
