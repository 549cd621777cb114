import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import OpenAI from 'openai';
import { type PrebleProcess, startPreble } from '../../src/bench/preble-process.ts';

// Acceptance: the official SDK against `preble serve` started without --model, in front of two
// `preble engine` processes, everything over real HTTP between separate processes.
const started: PrebleProcess[] = [];
let client: OpenAI;

before(async () => {
  for (const seed of [0, 1])
    started.push(
      await startPreble(['engine', '--port', '0', '--time-scale', '1000', '--seed', String(seed)]),
    );
  const gateway = await startPreble([
    'serve',
    '--port',
    '0',
    '--seed',
    '0',
    ...started.flatMap((e) => ['--replica', e.url]),
  ]);
  started.push(gateway);
  client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
// Every process is stopped by its PID whatever happened (a failed start leaves none behind either:
// startPreble kills what it started before rejecting).
after(async () => {
  for (const p of started.reverse()) await p.stop();
});

const system = 'You answer questions about one long shared document. '.repeat(20);

/** Cached tokens must be reported (a number), as the gateway's routing feedback depends on them. */
function cachedOf(usage: { prompt_tokens_details?: { cached_tokens?: number } | null } | null | undefined) {
  const cached = usage?.prompt_tokens_details?.cached_tokens;
  assert.equal(
    typeof cached,
    'number',
    `usage.prompt_tokens_details.cached_tokens in ${JSON.stringify(usage)}`,
  );
  return cached!;
}

test("models.list() names the replicas' model, and data[0].id serves completions and chats, streamed and not", async () => {
  const models = await client.models.list();
  assert.ok(models.data.length > 0, 'the gateway lists what its replicas serve');
  const model = models.data[0]!.id;
  assert.equal(model, 'mistral-7b-a6000');

  const completion = await client.completions.create({ model, prompt: `${system}Q1?`, max_tokens: 4 });
  assert.equal(completion.choices[0]!.text.length, 4);
  assert.equal(completion.usage?.completion_tokens, 4);
  assert.equal(completion.usage?.prompt_tokens, `${system}Q1?`.length);
  cachedOf(completion.usage);

  const streamed = await client.completions.create({
    model,
    prompt: `${system}Q2?`,
    max_tokens: 4,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let streamedUsage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of streamed) {
    text += chunk.choices[0]?.text ?? '';
    if (chunk.usage) streamedUsage = chunk.usage;
  }
  assert.equal(text.length, 4);
  assert.equal(streamedUsage?.completion_tokens, 4);
  // The shared document was prefilled by Q1 on the replica e2 keeps it on.
  assert.ok(cachedOf(streamedUsage) >= system.length, `cached ${cachedOf(streamedUsage)}`);

  const messages = [
    { role: 'system' as const, content: system },
    { role: 'user' as const, content: 'Chat question?' },
  ];
  const chat = await client.chat.completions.create({ model, messages, max_tokens: 3 });
  assert.equal(chat.choices[0]!.message.role, 'assistant');
  assert.equal(chat.choices[0]!.message.content?.length, 3);
  assert.equal(chat.usage?.completion_tokens, 3);
  cachedOf(chat.usage);

  const chatStream = await client.chat.completions.create({
    model,
    messages,
    max_tokens: 3,
    stream: true,
    stream_options: { include_usage: true },
  });
  let content = '';
  let finish: string | null = null;
  let chatUsage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of chatStream) {
    content += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) chatUsage = chunk.usage;
  }
  assert.equal(content.length, 3);
  assert.equal(finish, 'length');
  assert.equal(chatUsage?.completion_tokens, 3);
  // The same chat again: its whole prompt is cached on the replica that answered it.
  assert.ok(cachedOf(chatUsage) > 0);
});

test('a model no replica serves is a 404 model_not_found through the SDK', async () => {
  await assert.rejects(
    client.completions.create({ model: 'no-such-model', prompt: 'x', max_tokens: 1 }),
    (error: unknown) => {
      assert.ok(error instanceof OpenAI.NotFoundError);
      assert.equal(error.code, 'model_not_found');
      return true;
    },
  );
});
