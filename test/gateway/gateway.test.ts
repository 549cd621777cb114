import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import { createGateway, type Gateway } from '../../src/gateway/server.ts';
import { startFakeReplica } from './fake-replica.ts';

const replicas: Awaited<ReturnType<typeof startFakeReplica>>[] = [];
const gateways: Gateway[] = [];

async function gatewayWith(policy: string, model?: string): Promise<{ url: string; gateway: Gateway }> {
  const costModel = costModelPreset('mistral-7b-a6000');
  const gateway = createGateway({
    createPolicy: () => createGlobalPolicy(policy, { costModel }),
    replicas: replicas.map((r) => r.url),
    replicaKvTokens: costModel.kvCapacityTokens,
    ...(model === undefined ? {} : { model }),
  });
  gateways.push(gateway);
  return { url: await gateway.listen(0, '127.0.0.1'), gateway };
}

before(async () => {
  for (const name of ['r0', 'r1', 'r2']) replicas.push(await startFakeReplica(name));
});
after(async () => {
  for (const g of gateways) await g.close();
  for (const r of replicas) await r.app.close();
});

const system = 'You are a careful assistant. '.repeat(40);

test('the official client gets completions and chats through the gateway, streamed and not, with usage', async () => {
  const { url } = await gatewayWith('e2');
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x' });
  const completion = await client.completions.create({ model: 'm', prompt: 'hello', max_tokens: 3 });
  assert.equal(completion.choices[0]!.text, 'abc');
  assert.ok(completion.usage!.prompt_tokens > 0);
  const chat = await client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(chat.choices[0]!.message.content, 'abc');
  assert.ok(chat.usage?.prompt_tokens_details?.cached_tokens !== undefined);
  let text = '';
  const stream = await client.chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'hi again' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let usageSeen = false;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    if (chunk.usage) usageSeen = true;
  }
  assert.equal(text, 'abc');
  assert.ok(usageSeen, 'usage arrives when the client asks for it');
  const plain = await client.completions.create({ model: 'm', prompt: 'stream me', stream: true });
  let streamed = '';
  for await (const chunk of plain) streamed += chunk.choices[0]?.text ?? '';
  assert.equal(streamed, 'abc');
});

test('e2 keeps requests sharing a long prefix on one replica; round robin spreads them', async () => {
  for (const [policy, expectOne] of [
    ['e2', true],
    ['round-robin', false],
  ] as const) {
    for (const r of replicas) r.served.length = 0;
    const { url } = await gatewayWith(policy);
    const where = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'm',
          messages: [
            { role: 'system', content: system },
            { role: 'user', content: `question ${i}` },
          ],
        }),
      });
      assert.equal(res.status, 200);
      where.add(res.headers.get('x-preble-replica')!);
      await res.json();
    }
    if (expectOne) assert.equal(where.size, 1, 'e2 exploits the replica that caches the prefix');
    else assert.equal(where.size, 3, 'round robin uses every replica');
  }
});

test('bad input gets OpenAI-style JSON errors with the right status', async () => {
  const { url } = await gatewayWith('round-robin', 'served-model');
  const post = (path: string, body: string) =>
    fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const cases: [string, string, number][] = [
    ['/v1/completions', '{"model": "served-model", "prompt": ', 400],
    ['/v1/completions', '{"model": "served-model", "prompt": 42}', 400],
    ['/v1/chat/completions', '{"model": "served-model"}', 400],
    ['/v1/completions', '{"model": "other", "prompt": "x"}', 404],
    ['/v1/completions', '{"model": "served-model", "prompt": "x", "max_tokens": 0}', 400],
    ['/v1/completions', `{"model": "served-model", "prompt": "${'x'.repeat(5 * 1024 * 1024)}"}`, 413],
  ];
  for (const [path, body, status] of cases) {
    const res = await post(path, body);
    assert.equal(res.status, status, `${body.slice(0, 60)} -> ${status}`);
    const json = (await res.json()) as { error: { message: string; type: string } };
    assert.equal(typeof json.error.message, 'string');
    assert.equal(typeof json.error.type, 'string');
  }
});

test('metrics count decisions by branch and in-flight returns to zero', async () => {
  const { url } = await gatewayWith('e2');
  await (
    await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model":"m","prompt":"count me"}',
    })
  ).json();
  const text = await (await fetch(`${url}/metrics`)).text();
  assert.match(text, /preble_requests_total\{route="completions",branch="explore",outcome="ok"\} 1/);
  for (const line of text.split('\n').filter((l) => l.startsWith('preble_replica_inflight_requests{'))) {
    assert.match(line, / 0$/);
  }
});
