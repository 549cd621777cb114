import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import { createEngineServer } from '../../src/emulator/server.ts';
import { dialectOf } from '../../src/gateway/dialects.ts';
import { metricValues } from '../../src/gateway/prometheus-text.ts';
import { createGateway } from '../../src/gateway/server.ts';

test('metric values are read by name and summed over label sets', () => {
  const text = [
    '# HELP vllm:num_requests_running Requests.',
    '# TYPE vllm:num_requests_running gauge',
    'vllm:num_requests_running{model_name="a"} 2',
    'vllm:num_requests_running{model_name="b"} 3',
    'vllm:num_requests_waiting 4',
    'other_metric 9',
  ].join('\n');
  const v = metricValues(text, ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'missing']);
  assert.equal(v.get('vllm:num_requests_running'), 5);
  assert.equal(v.get('vllm:num_requests_waiting'), 4);
  assert.equal(v.has('missing'), false);
});

test('a vLLM replica gives a load signal from its usage share; none from a text without vLLM names', () => {
  const loadSignalFrom = dialectOf('vllm').loadSignal;
  const s = loadSignalFrom(
    'vllm:num_requests_running 1\nvllm:num_requests_waiting 2\nvllm:gpu_cache_usage_perc 0.25\n',
    1000,
  );
  assert.deepEqual(s, {
    running: 1,
    waiting: 2,
    queuedPrefillTokens: 0,
    usedKvTokens: 250,
    freeKvTokens: 750,
  });
  assert.equal(loadSignalFrom('up 1\n', 1000), undefined);
});

const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

test('the gateway polls replicas for load: sal routes by its fallback before the first poll and by load after', async () => {
  const engine = createEngineServer({ timeScale: 1000 });
  const { url: replica } = await engine.listen(0, '127.0.0.1');
  closers.push(() => engine.close(0));
  const costModel = costModelPreset('mistral-7b-a6000');
  const gateway = createGateway({
    createPolicy: () => createGlobalPolicy('sal', { costModel }),
    replicas: [replica],
    replicaKvTokens: costModel.kvCapacityTokens,
    pollSeconds: 0,
  });
  closers.push(() => gateway.close());
  const url = await gateway.listen(0, '127.0.0.1');
  const branch = async () => {
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'mistral-7b-a6000', prompt: 'hello', max_tokens: 2 }),
    });
    await res.json();
    return res.headers.get('x-preble-branch');
  };
  assert.equal(await branch(), 'fallback');
  await gateway.pollNow();
  assert.equal(await branch(), 'load');
});
