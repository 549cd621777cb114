import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FILLER, generatedText } from '../../src/emulator/text.ts';
import { renderChat } from '../../src/text/chat-template.ts';
import { MODEL, postJson, type Running, startServer } from './helpers.ts';

describe('preble engine: content parts, n, stop and ids over HTTP', () => {
  let s: Running;
  let other: Running;
  before(async () => {
    s = await startServer();
    other = await startServer();
  });
  after(async () => {
    await s.close();
    await other.close();
  });

  it('accepts chat content as text parts, joined with newlines', async () => {
    const parts = await s.client.chat.completions.create({
      model: MODEL,
      max_tokens: 2,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'first line' },
            { type: 'text', text: 'second line' },
          ],
        },
      ],
    });
    const joined = renderChat([{ role: 'user', content: 'first line\nsecond line' }]);
    assert.equal(parts.usage?.prompt_tokens, joined.length);
    assert.equal(parts.choices[0]!.message.content, FILLER.slice(0, 2));
  });

  it('refuses a non-text content part with a 400 naming its type', async () => {
    const r = await postJson(`${s.url}/v1/chat/completions`, {
      model: MODEL,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'http://x/y.png' } },
          ],
        },
      ],
    });
    assert.equal(r.status, 400);
    const error = r.json['error'] as { message: string; param: string; type: string };
    assert.equal(error.type, 'invalid_request_error');
    assert.equal(error.param, 'messages.0.content.1.type');
    assert.match(error.message, /unsupported content part type 'image_url'/);
  });

  it('answers n choices, each its own text, with the outputs summed in usage', async () => {
    const r = await s.client.completions.create({ model: MODEL, prompt: 'pick three', max_tokens: 4, n: 3 });
    assert.deepEqual(
      r.choices.map((c) => c.index),
      [0, 1, 2],
    );
    assert.deepEqual(
      r.choices.map((c) => c.text),
      [0, 1, 2].map((k) => generatedText(4, k)),
    );
    assert.equal(r.usage?.prompt_tokens, 'pick three'.length);
    assert.equal(r.usage?.completion_tokens, 12);
    const chat = await s.client.chat.completions.create({
      model: MODEL,
      max_tokens: 3,
      n: 2,
      messages: [{ role: 'user', content: 'two please' }],
    });
    assert.equal(chat.choices.length, 2);
    assert.equal(chat.choices[1]!.message.content, generatedText(3, 1));
  });

  it('streams n choices, each closed by its own finish_reason, then usage', async () => {
    const stream = await s.client.chat.completions.create({
      model: MODEL,
      max_tokens: 5,
      n: 2,
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'stream two' }],
    });
    const text = ['', ''];
    const finish: (string | null)[] = [null, null];
    let usage: { completion_tokens: number } | undefined;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text[c.index] += c.delta.content ?? '';
        finish[c.index] = c.finish_reason ?? finish[c.index]!;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert.deepEqual(text, [generatedText(5, 0), generatedText(5, 1)]);
    assert.deepEqual(finish, ['length', 'length']);
    assert.equal(usage?.completion_tokens, 10);
  });

  it('stops at the first stop string, without it, with finish_reason stop', async () => {
    // FILLER = 'lorem ipsum dolor sit amet ': the first 'dolor' starts at 12.
    const r = await s.client.completions.create({
      model: MODEL,
      prompt: 'stop me',
      max_tokens: 20,
      stop: ['sit', 'dolor'],
    });
    assert.equal(r.choices[0]!.text, 'lorem ipsum ');
    assert.equal(r.choices[0]!.finish_reason, 'stop');
    assert.equal(r.usage?.completion_tokens, 'lorem ipsum dolor'.length, 'the stop string was generated');
    const stream = await s.client.chat.completions.create({
      model: MODEL,
      max_tokens: 20,
      stop: 'ipsum',
      stream: true,
      messages: [{ role: 'user', content: 'stop streaming' }],
    });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.equal(text, 'lorem ');
    assert.equal(finish, 'stop');
    // A stop string that never comes: the whole max_tokens, finish_reason length.
    const none = await s.client.completions.create({
      model: MODEL,
      prompt: 'no stop',
      max_tokens: 5,
      stop: 'zzz',
    });
    assert.equal(none.choices[0]!.text, FILLER.slice(0, 5));
    assert.equal(none.choices[0]!.finish_reason, 'length');
  });

  it('refuses n out of range and a stop of the wrong shape', async () => {
    const n = await postJson(`${s.url}/v1/completions`, { model: MODEL, prompt: 'x', n: 0 });
    assert.equal(n.status, 400);
    assert.equal((n.json['error'] as { param: string }).param, 'n');
    const stop = await postJson(`${s.url}/v1/completions`, { model: MODEL, prompt: 'x', stop: 5 });
    assert.equal(stop.status, 400);
    assert.equal((stop.json['error'] as { param: string }).param, 'stop');
  });

  it('gives every answer a unique id, across replicas too', async () => {
    const ids = new Set<string>();
    for (const server of [s, other, s, other]) {
      const r = await server.client.chat.completions.create({
        model: MODEL,
        max_tokens: 1,
        messages: [{ role: 'user', content: 'id?' }],
      });
      assert.match(r.id, /^chatcmpl-[0-9a-f]{32}$/);
      ids.add(r.id);
    }
    assert.equal(ids.size, 4);
  });
});
