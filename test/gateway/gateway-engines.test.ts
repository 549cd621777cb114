import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import { createEngineServer } from '../../src/emulator/server.ts';
import { createGateway, type Gateway } from '../../src/gateway/server.ts';

const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

/** Two emulated engines (fast clock) behind a fresh gateway with the given policy. */
async function cluster(policy: string): Promise<{ url: string; gateway: Gateway }> {
  const urls: string[] = [];
  for (let i = 0; i < 2; i++) {
    const engine = createEngineServer({ timeScale: 1000 });
    const { url } = await engine.listen(0, '127.0.0.1');
    closers.push(() => engine.close(0));
    urls.push(url);
  }
  const costModel = costModelPreset('mistral-7b-a6000');
  const gateway = createGateway({
    createPolicy: () => createGlobalPolicy(policy, { costModel }),
    replicas: urls,
    replicaKvTokens: costModel.kvCapacityTokens,
  });
  closers.push(() => gateway.close());
  return { url: await gateway.listen(0, '127.0.0.1'), gateway };
}

const system = 'You answer questions about a long shared document. '.repeat(60);

async function ask(url: string, question: string) {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'mistral-7b-a6000',
      max_tokens: 4,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: question },
      ],
    }),
  });
  assert.equal(res.status, 200);
  const json = (await res.json()) as {
    usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
  };
  return { replica: res.headers.get('x-preble-replica')!, usage: json.usage };
}

test('through real emulated engines, e2 reuses the cached system prompt and round robin splits it', async () => {
  const results: Record<string, { replicas: number; cached: number; prompt: number }> = {};
  for (const policy of ['e2', 'round-robin']) {
    const { url } = await cluster(policy);
    const seen = new Set<string>();
    let cached = 0;
    let prompt = 0;
    for (let i = 0; i < 8; i++) {
      const r = await ask(url, `question number ${i}?`);
      seen.add(r.replica);
      cached += r.usage.prompt_tokens_details.cached_tokens;
      prompt += r.usage.prompt_tokens;
    }
    results[policy] = { replicas: seen.size, cached, prompt };
  }
  assert.equal(results['e2']!.replicas, 1, 'e2 keeps the shared prefix on one replica');
  assert.equal(results['round-robin']!.replicas, 2);
  // The replicas' own counts: e2 misses the system prompt once, round robin once per replica.
  assert.ok(
    results['e2']!.cached > results['round-robin']!.cached,
    `cached tokens e2 ${results['e2']!.cached} > round robin ${results['round-robin']!.cached}`,
  );
});
