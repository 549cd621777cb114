import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FILLER } from '../../src/emulator/text.ts';
import { MODEL, type Running, startServer } from './helpers.ts';

describe('preble engine: OpenAI API over HTTP', () => {
  let s: Running;
  before(async () => {
    s = await startServer();
  });
  after(async () => {
    await s.close();
  });

  it('completes a prompt with exactly max_tokens tokens and usage', async () => {
    const r = await s.client.completions.create({ model: MODEL, prompt: 'Hello there', max_tokens: 7 });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.model, MODEL);
    assert.equal(r.choices[0]!.text, FILLER.slice(0, 7));
    assert.equal(r.choices[0]!.finish_reason, 'length');
    assert.equal(r.usage?.prompt_tokens, 'Hello there'.length);
    assert.equal(r.usage?.completion_tokens, 7);
    assert.equal(r.usage?.total_tokens, 'Hello there'.length + 7);
  });

  it('defaults max_tokens to 16', async () => {
    const r = await s.client.completions.create({ model: MODEL, prompt: 'abc' });
    assert.equal(r.usage?.completion_tokens, 16);
    assert.equal(r.choices[0]!.text.length, 16);
  });

  it('streams a completion ending with usage when asked', async () => {
    const stream = await s.client.completions.create({
      model: MODEL,
      prompt: 'Stream me',
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    let usage: { completion_tokens: number } | undefined;
    for await (const chunk of stream) {
      if (chunk.choices.length > 0) {
        text += chunk.choices[0]!.text;
        finish = chunk.choices[0]!.finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, FILLER.slice(0, 5));
    assert.equal(finish, 'length');
    assert.equal(usage?.completion_tokens, 5);
  });

  it('answers a chat, non-streaming, with max_completion_tokens', async () => {
    const r = await s.client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      max_completion_tokens: 9,
    });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0]!.message.role, 'assistant');
    assert.equal(r.choices[0]!.message.content, FILLER.slice(0, 9));
    assert.equal(r.choices[0]!.finish_reason, 'length');
    const prompt =
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n';
    assert.equal(r.usage?.prompt_tokens, prompt.length);
    assert.equal(r.usage?.completion_tokens, 9);
    assert.equal(typeof r.usage?.prompt_tokens_details?.cached_tokens, 'number');
  });

  it('streams a chat token by token, without usage unless asked', async () => {
    const stream = await s.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Count' }],
      max_tokens: 12,
      stream: true,
    });
    const contents: string[] = [];
    let role: string | undefined;
    let finish: string | null = null;
    let sawUsage = false;
    for await (const chunk of stream) {
      if (chunk.usage) sawUsage = true;
      const choice = chunk.choices[0];
      if (!choice) continue;
      role ??= choice.delta.role;
      if (choice.delta.content) contents.push(choice.delta.content);
      finish = choice.finish_reason ?? finish;
    }
    assert.equal(role, 'assistant');
    assert.equal(contents.length, 12, 'one chunk per generated token');
    assert.equal(contents.join(''), FILLER.slice(0, 12));
    assert.equal(finish, 'length');
    assert.equal(sawUsage, false);
  });

  it('serves a shared long prefix from the cache on a second request', async () => {
    const system = `You are a helpful agent. ${'Tools: search, calculator, calendar. '.repeat(40)}`;
    const first = await s.client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: 'first question' },
      ],
      max_tokens: 4,
    });
    const second = await s.client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: system },
        { role: 'user', content: 'second question' },
      ],
      max_tokens: 4,
    });
    const firstCached = first.usage?.prompt_tokens_details?.cached_tokens ?? -1;
    const secondCached = second.usage?.prompt_tokens_details?.cached_tokens ?? -1;
    assert.ok(secondCached > system.length, `cached ${secondCached} of ${second.usage?.prompt_tokens}`);
    assert.ok(secondCached > firstCached);
    assert.ok(secondCached < (second.usage?.prompt_tokens ?? 0));
  });

  it('runs concurrent requests to completion', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        s.client.completions.create({ model: MODEL, prompt: `request ${i} `.repeat(10), max_tokens: 3 + i }),
      ),
    );
    results.forEach((r, i) => {
      assert.equal(r.usage?.completion_tokens, 3 + i);
      assert.equal(r.choices[0]!.text, FILLER.repeat(2).slice(0, 3 + i));
    });
    assert.equal(s.server.driver.inFlight, 0);
  });

  it('lists its model and reports health', async () => {
    const models = await s.client.models.list();
    assert.deepEqual(
      models.data.map((m) => m.id),
      [MODEL],
    );
    const health = await fetch(`${s.url}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
  });
});
