import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { generatedText } from '../../src/emulator/text.ts';
import { renderChat } from '../../src/text/chat-template.ts';
import { complete, type Engine, MODEL, startEngine, startGateway } from './helpers.ts';

const engines: Engine[] = [];
let url: string;
let client: OpenAI;
let policyInflight: () => number;
let closeGateway: () => Promise<void>;

before(async () => {
  for (let i = 0; i < 2; i++) engines.push(await startEngine());
  const started = await startGateway(engines.map((e) => e.url));
  url = started.url;
  policyInflight = started.policyInflight;
  closeGateway = () => started.gateway.close();
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'x', maxRetries: 0 });
});
after(async () => {
  await closeGateway();
  for (const e of engines) await e.server.close(0);
});

test('chat content as text parts goes through; the replica sees the joined text the gateway routed on', async () => {
  const r = await client.chat.completions.create({
    model: MODEL,
    max_tokens: 2,
    messages: [
      { role: 'system', content: [{ type: 'text', text: 'be brief' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'one' },
          { type: 'text', text: 'two' },
        ],
      },
    ],
  });
  const joined = renderChat([
    { role: 'system', content: 'be brief' },
    { role: 'user', content: 'one\ntwo' },
  ]);
  assert.equal(r.usage?.prompt_tokens, joined.length);
});

test('a non-text content part is a 400 from the gateway naming the part type', async () => {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: MODEL,
      messages: [
        { role: 'user', content: [{ type: 'input_audio', input_audio: { data: '', format: 'wav' } }] },
      ],
    }),
  });
  assert.equal(res.status, 400);
  const { error } = (await res.json()) as { error: { message: string; param: string; type: string } };
  assert.equal(error.type, 'invalid_request_error');
  assert.equal(error.param, 'messages.0.content.0.type');
  assert.match(error.message, /unsupported content part type 'input_audio'/);
});

test('n choices pass through the gateway, streamed and not', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: 'several', max_tokens: 3, n: 2 });
  assert.deepEqual(
    r.choices.map((c) => c.text),
    [generatedText(3, 0), generatedText(3, 1)],
  );
  assert.equal(r.usage?.completion_tokens, 6);
  const stream = await client.chat.completions.create({
    model: MODEL,
    max_tokens: 3,
    n: 3,
    stream: true,
    messages: [{ role: 'user', content: 'three streams' }],
  });
  const text = ['', '', ''];
  for await (const chunk of stream) for (const c of chunk.choices) text[c.index] += c.delta.content ?? '';
  assert.deepEqual(
    text,
    [0, 1, 2].map((k) => generatedText(3, k)),
  );
  const bad = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: 'x', n: 1000 }),
  });
  assert.equal(bad.status, 400);
  assert.equal(((await bad.json()) as { error: { param: string } }).error.param, 'n');
});

test('stop strings reach the replica, which ends the text before them', async () => {
  const r = await client.completions.create({
    model: MODEL,
    prompt: 'stop',
    max_tokens: 20,
    stop: ['ipsum'],
  });
  assert.equal(r.choices[0]!.text, 'lorem ');
  assert.equal(r.choices[0]!.finish_reason, 'stop');
  const stream = await client.chat.completions.create({
    model: MODEL,
    max_tokens: 20,
    stop: 'dolor',
    stream: true,
    messages: [{ role: 'user', content: 'stop streaming' }],
  });
  let text = '';
  let finish: string | null = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, 'lorem ipsum ');
  assert.equal(finish, 'stop');
});

test('response ids are unique across the replicas behind the gateway', async () => {
  const ids = new Set<string>();
  const replicas = new Set<string | null>();
  for (let i = 0; i < 6; i++) {
    const { data, response } = await client.chat.completions
      .create({ model: MODEL, max_tokens: 1, messages: [{ role: 'user', content: 'same prompt' }] })
      .withResponse();
    ids.add(data.id);
    replicas.add(response.headers.get('x-preble-replica'));
  }
  assert.equal(replicas.size, 2, 'round robin used both replicas');
  assert.equal(ids.size, 6);
  assert.equal(policyInflight(), 0);
});

test('n above 1 for a llama-server replica is a 400 from the gateway, never a replica fault', async () => {
  const engine = await startEngine();
  const started = await startGateway([{ url: engine.url, dialect: 'llamacpp' }]);
  try {
    const res = await fetch(`${started.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: 'two please', max_tokens: 2, n: 2 }),
    });
    assert.equal(res.status, 400);
    const { error } = (await res.json()) as { error: { message: string; param: string } };
    assert.equal(error.param, 'n');
    assert.match(error.message, /llamacpp replicas answer at most 1 choice/);
    assert.equal(started.gateway.replicas.get(0)!.breaker.state(0), 'closed');
    const one = await complete(started.url, { n: 1 });
    assert.equal(one.status, 200);
    assert.equal((one.json['choices'] as unknown[]).length, 1);
    assert.equal(started.policyInflight(), 0);
    assert.equal(started.gateway.replicas.get(0)!.inflight, 0);
  } finally {
    await started.gateway.close();
    await engine.server.close(0);
  }
});
