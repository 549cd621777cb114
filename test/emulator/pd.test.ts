import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createEngineServer, type EngineServer } from '../../src/emulator/server.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON answers, read by their known shape
type Json = Record<string, any>;

const MODEL = 'mistral-7b-a6000';

async function post(url: string, path: string, body: Record<string, unknown>) {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, ...body }),
  });
  return { status: res.status, json: (await res.json()) as Json };
}

describe('preble engine --role prefill|decode (vLLM-style kv_transfer_params)', () => {
  const servers: EngineServer[] = [];
  let mixed = '';
  let prefill = '';
  let decode = '';
  let prefillServer: EngineServer;
  before(async () => {
    const start = async (role: 'mixed' | 'prefill' | 'decode') => {
      const s = createEngineServer({ timeScale: 1000, role });
      servers.push(s);
      return { s, url: (await s.listen(0, '127.0.0.1')).url };
    };
    mixed = (await start('mixed')).url;
    const p = await start('prefill');
    prefill = p.url;
    prefillServer = p.s;
    decode = (await start('decode')).url;
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.close(100)));
  });

  it('prefills, hands the KV over and decodes the same text as a mixed engine, the prompt cached', async () => {
    const prompt = 'the quick brown fox jumps over the lazy dog';
    const whole = await post(mixed, '/v1/completions', { prompt, max_tokens: 8 });
    const p = await post(prefill, '/v1/completions', {
      prompt,
      max_tokens: 1,
      stream: false,
      kv_transfer_params: { do_remote_decode: true },
    });
    assert.equal(p.status, 200);
    const params = p.json['kv_transfer_params'];
    assert.equal(params.do_remote_prefill, true);
    assert.equal(typeof params.remote_engine_id, 'string');
    assert.equal(params.remote_port, Number(new URL(prefill).port));
    assert.ok(Array.isArray(params.remote_block_ids));
    assert.equal(prefillServer.kvHolder?.size, 1);
    const d = await post(decode, '/v1/completions', { prompt, max_tokens: 8, kv_transfer_params: params });
    assert.equal(d.status, 200, JSON.stringify(d.json));
    assert.equal(d.json['choices'][0].text, whole.json['choices'][0].text);
    assert.equal(d.json['usage'].prompt_tokens, prompt.length);
    assert.equal(d.json['usage'].prompt_tokens_details.cached_tokens, prompt.length);
    assert.equal(d.json['usage'].completion_tokens, 8);
    assert.equal(prefillServer.kvHolder?.size, 0, 'the pull frees the KV on the prefill side');
    // The KV went once: a second decode with the same params finds nothing to pull.
    const again = await post(decode, '/v1/completions', {
      prompt,
      max_tokens: 8,
      kv_transfer_params: params,
    });
    assert.equal(again.status, 503);
    assert.equal(again.json['error'].code, 'kv_transfer_failed');
  });

  it('a one-token answer needs nothing computed on the decode side', async () => {
    const prompt = 'one token only';
    const p = await post(prefill, '/v1/completions', {
      prompt,
      max_tokens: 1,
      kv_transfer_params: { do_remote_decode: true },
    });
    const d = await post(decode, '/v1/completions', {
      prompt,
      max_tokens: 1,
      kv_transfer_params: p.json['kv_transfer_params'],
    });
    assert.equal(d.status, 200);
    assert.equal(d.json['usage'].completion_tokens, 1);
    assert.equal(d.json['choices'][0].text, p.json['choices'][0].text);
  });

  it('refuses requests its role cannot run', async () => {
    const p = await post(prefill, '/v1/completions', { prompt: 'x', max_tokens: 2 });
    assert.equal(p.status, 400);
    assert.equal(p.json['error'].param, 'kv_transfer_params');
    const d = await post(decode, '/v1/completions', { prompt: 'x', max_tokens: 2 });
    assert.equal(d.status, 400);
    const s = await post(prefill, '/v1/completions', {
      prompt: 'x',
      stream: true,
      kv_transfer_params: { do_remote_decode: true },
    });
    assert.equal(s.status, 400);
  });

  it('releases a KV nobody pulls after the hold timeout', async () => {
    const s = createEngineServer({ timeScale: 1000, role: 'prefill', kvHoldSeconds: 0.05 });
    servers.push(s);
    const { url } = await s.listen(0, '127.0.0.1');
    const p = await post(url, '/v1/completions', {
      prompt: 'held',
      kv_transfer_params: { do_remote_decode: true },
    });
    assert.equal(p.status, 200);
    for (let i = 0; i < 200 && s.kvHolder!.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(s.kvHolder!.size, 0);
    assert.equal(s.driver.engine.snapshot().heldRequests, 0);
  });
});
