import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MODEL, metricValue, postJson, type Running, startServer } from './helpers.ts';

function assertError(json: Record<string, unknown>, code?: string): void {
  const error = json['error'] as Record<string, unknown>;
  assert.equal(typeof error, 'object');
  assert.equal(typeof error['message'], 'string');
  assert.ok('type' in error && 'param' in error && 'code' in error);
  if (code !== undefined) assert.equal(error['code'], code);
}

describe('preble engine: errors, /tokenize, /metrics', () => {
  let s: Running;
  before(async () => {
    s = await startServer({ bodyLimit: 64 * 1024 });
  });
  after(async () => {
    await s.close();
  });

  it('rejects malformed JSON with 400', async () => {
    const r = await postJson(`${s.url}/v1/completions`, '{"model": ', true);
    assert.equal(r.status, 400);
    assertError(r.json);
    assert.equal((r.json['error'] as { type: string }).type, 'invalid_request_error');
  });

  it('rejects missing fields, wrong types and max_tokens out of range with 400', async () => {
    const cases: [string, unknown, string][] = [
      ['/v1/completions', { model: MODEL }, 'prompt'],
      ['/v1/completions', { prompt: 'x' }, 'model'],
      ['/v1/completions', { model: MODEL, prompt: 42 }, 'prompt'],
      ['/v1/completions', { model: MODEL, prompt: 'x', max_tokens: 0 }, 'max_tokens'],
      ['/v1/completions', { model: MODEL, prompt: 'x', max_tokens: 4097 }, 'max_tokens'],
      ['/v1/completions', { model: MODEL, prompt: 'x', max_tokens: 1.5 }, 'max_tokens'],
      ['/v1/completions', { model: MODEL, prompt: 'x', stream: 'yes' }, 'stream'],
      ['/v1/chat/completions', { model: MODEL }, 'messages'],
      ['/v1/chat/completions', { model: MODEL, messages: [{ role: 'user' }] }, 'messages.0.content'],
      [
        '/v1/chat/completions',
        { model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: -1 },
        'max_tokens',
      ],
    ];
    for (const [path, body, param] of cases) {
      const r = await postJson(`${s.url}${path}`, body);
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}`);
      assertError(r.json);
      assert.equal((r.json['error'] as { param: string }).param, param, JSON.stringify(r.json));
    }
  });

  it('answers an unknown model with 404 model_not_found', async () => {
    const r = await postJson(`${s.url}/v1/chat/completions`, {
      model: 'gpt-nope',
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.equal(r.status, 404);
    assertError(r.json, 'model_not_found');
  });

  it('answers an oversized body with 413', async () => {
    const r = await postJson(`${s.url}/v1/completions`, { model: MODEL, prompt: 'x'.repeat(100 * 1024) });
    assert.equal(r.status, 413);
    assertError(r.json);
  });

  it('answers a prompt larger than the KV capacity with 400', async () => {
    const small = await startServer({ kvTokens: 1000 });
    try {
      const r = await postJson(`${small.url}/v1/completions`, { model: MODEL, prompt: 'x'.repeat(2000) });
      assert.equal(r.status, 400);
      assertError(r.json, 'context_length_exceeded');
    } finally {
      await small.close();
    }
  });

  it('answers unknown routes with a JSON 404', async () => {
    const r = await fetch(`${s.url}/v1/nothing`);
    assert.equal(r.status, 404);
    assertError((await r.json()) as Record<string, unknown>);
  });

  it('tokenizes a prompt or a chat with the engine tokenizer', async () => {
    const p = await postJson(`${s.url}/tokenize`, { prompt: 'héllo' });
    assert.equal(p.status, 200);
    assert.deepEqual(
      p.json['tokens'],
      [...'héllo'].map((c) => c.codePointAt(0)),
    );
    assert.equal(p.json['count'], 5);
    const c = await postJson(`${s.url}/tokenize`, { messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(c.json['count'], '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n'.length);
    const bad = await postJson(`${s.url}/tokenize`, { nothing: true });
    assert.equal(bad.status, 400);
    assertError(bad.json);
  });

  it('exposes vLLM metrics whose counters grow with traffic', async () => {
    const names = [
      'vllm:num_requests_running',
      'vllm:num_requests_waiting',
      'vllm:gpu_cache_usage_perc',
      'vllm:prompt_tokens_total',
      'vllm:generation_tokens_total',
      'vllm:gpu_prefix_cache_queries_total',
      'vllm:gpu_prefix_cache_hits_total',
      'vllm:num_preemptions_total',
    ];
    const before = await (await fetch(`${s.url}/metrics`)).text();
    for (const name of names) assert.ok(Number.isFinite(metricValue(before, name)), name);
    const prompt = 'A long shared document. '.repeat(30);
    for (const suffix of ['one', 'two']) {
      await s.client.completions.create({ model: MODEL, prompt: prompt + suffix, max_tokens: 4 });
    }
    const res = await fetch(`${s.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    const afterText = await res.text();
    const grew = (name: string) => metricValue(afterText, name) - metricValue(before, name);
    assert.equal(grew('vllm:prompt_tokens_total'), 2 * prompt.length + 6);
    assert.equal(grew('vllm:gpu_prefix_cache_queries_total'), 2 * prompt.length + 6);
    assert.ok(grew('vllm:gpu_prefix_cache_hits_total') >= prompt.length);
    assert.equal(grew('vllm:generation_tokens_total'), 8);
    assert.equal(metricValue(afterText, 'vllm:num_requests_running'), 0);
    const usage = metricValue(afterText, 'vllm:gpu_cache_usage_perc');
    assert.ok(usage >= 0 && usage <= 1);
  });

  it('aborts a streaming request in the engine when the client disconnects', async () => {
    const controller = new AbortController();
    const res = await fetch(`${s.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: 'long one', max_tokens: 4096, stream: true }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    assert.equal(s.server.driver.inFlight, 1);
    controller.abort();
    for (let i = 0; i < 200 && s.server.driver.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(s.server.driver.inFlight, 0);
    assert.equal(s.server.driver.engine.hasWork(), false);
  });

  it('aborts a non-streaming request in the engine when the client disconnects', async () => {
    const controller = new AbortController();
    const pending = fetch(`${s.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: 'long two', max_tokens: 4096 }),
      signal: controller.signal,
    }).catch(() => undefined);
    for (let i = 0; i < 200 && s.server.driver.inFlight === 0; i++)
      await new Promise((r) => setTimeout(r, 5));
    assert.equal(s.server.driver.inFlight, 1);
    controller.abort();
    await pending;
    for (let i = 0; i < 200 && s.server.driver.inFlight > 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(s.server.driver.inFlight, 0);
    assert.equal(s.server.driver.engine.hasWork(), false);
  });
});
