import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { type PrebleProcess, startPreble } from '../../src/bench/preble-process.ts';

// Acceptance (issue 13): the official SDK, unchanged, through `preble serve --policy distserve` in
// front of `preble engine --role prefill` and `--role decode` processes; the decode engine pulls the
// KV from the prefill engine over HTTP, as the params the prefill answered name it. A mixed engine
// with the same seed answers the same text colocated.
const started: PrebleProcess[] = [];
let pd: OpenAI;
let colocated: OpenAI;
let prefillUrl = '';
let decodeUrl = '';
let gatewayUrl = '';

before(async () => {
  const engine = async (role: string) => {
    const p = await startPreble(['engine', '--port', '0', '--time-scale', '1000', '--role', role]);
    started.push(p);
    return p.url;
  };
  prefillUrl = await engine('prefill');
  decodeUrl = await engine('decode');
  const mixedUrl = await engine('mixed');
  const gateway = await startPreble([
    'serve',
    '--port',
    '0',
    '--policy',
    'distserve',
    '--prefill',
    prefillUrl,
    '--decode',
    decodeUrl,
  ]);
  started.push(gateway);
  gatewayUrl = gateway.url;
  pd = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  colocated = new OpenAI({ baseURL: `${mixedUrl}/v1`, apiKey: 'unused', maxRetries: 0 });
});
// Every process is stopped by its PID whatever happened.
after(async () => {
  for (const p of started.reverse()) await p.stop();
});

const system = 'You answer questions about one long shared document. '.repeat(10);

test('completions and chats, streamed and not, through a PD gateway equal the colocated answers, the prompt cached on decode', async () => {
  const model = (await pd.models.list()).data[0]!.id;
  const prompt = `${system}Q1?`;
  const a = await pd.completions.create({ model, prompt, max_tokens: 6 });
  const b = await colocated.completions.create({ model, prompt, max_tokens: 6 });
  assert.equal(a.choices[0]!.text, b.choices[0]!.text);
  assert.equal(a.usage?.prompt_tokens, prompt.length);
  assert.equal(
    a.usage?.prompt_tokens_details?.cached_tokens,
    prompt.length,
    'the decode replica computed no prompt token',
  );

  const stream = await pd.completions.create({
    model,
    prompt,
    max_tokens: 6,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, b.choices[0]!.text);
  assert.equal(usage?.completion_tokens, 6);

  const messages = [
    { role: 'system' as const, content: system },
    { role: 'user' as const, content: 'Chat question?' },
  ];
  const chat = await pd.chat.completions.create({ model, messages, max_tokens: 5 });
  const chatColocated = await colocated.chat.completions.create({ model, messages, max_tokens: 5 });
  assert.equal(chat.choices[0]!.message.content, chatColocated.choices[0]!.message.content);
  assert.equal(chat.usage?.prompt_tokens_details?.cached_tokens, chat.usage?.prompt_tokens);

  const chatStream = await pd.chat.completions.create({ model, messages, max_tokens: 5, stream: true });
  let content = '';
  let finish: string | null = null;
  for await (const chunk of chatStream) {
    content += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(content, chatColocated.choices[0]!.message.content);
  assert.equal(finish, 'length');
});

test('the answer names both replicas', async () => {
  const res = await fetch(`${gatewayUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mistral-7b-a6000', prompt: 'headers', max_tokens: 2 }),
  });
  assert.equal(res.status, 200);
  await res.json();
  assert.equal(res.headers.get('x-preble-prefill-replica'), prefillUrl);
  assert.equal(res.headers.get('x-preble-replica'), decodeUrl);
});
