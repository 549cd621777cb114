import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { slotBook } from '../../src/gateway/pd-llamacpp.ts';
import type { GatewayOptions, ReplicaSpec } from '../../src/gateway/server.ts';
import { type FakeLlama, type FakeLlamaOptions, type SlotDir, startFakeLlama } from './fake-llamacpp.ts';
import { gatewayMetric, startGateway } from './helpers.ts';
import { postJson, readAnswer, requestShapes, settle } from './pd-helpers.ts';

// llama.cpp prefill/decode disaggregation by moving the slot (src/gateway/pd-llamacpp.ts), over
// real HTTP against llama-server stand-ins that share a slot directory.

const closers: (() => Promise<void>)[] = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

async function fake(dir: SlotDir, options: FakeLlamaOptions = {}): Promise<FakeLlama> {
  const f = await startFakeLlama(dir, options);
  closers.push(() => f.app.close());
  return f;
}

async function gateway(
  specs: { fake: FakeLlama; role: 'prefill' | 'decode' | 'mixed' }[],
  options: Partial<GatewayOptions> = {},
) {
  const replicas: ReplicaSpec[] = specs.map(({ fake, role }) => ({
    url: fake.url,
    role,
    dialect: 'llamacpp',
    model: 'm',
  }));
  const pd = specs.some((s) => s.role !== 'mixed');
  const g = await startGateway(replicas, { drainSeconds: 1, ...options }, pd ? 'distserve' : 'round-robin');
  closers.push(() => g.gateway.close());
  const counts = () => ({
    policy: g.policyInflight(),
    replicas: g.gateway.replicas.all().reduce((s, r) => s + r.inflight, 0),
    slots: g.gateway.replicas.all().reduce((s, r) => s + slotBook(r).reserved, 0),
  });
  return { ...g, counts };
}

const post = (url: string, path: string, body: Record<string, unknown>, signal?: AbortSignal) =>
  postJson(url, path, body, 'm', signal);

/** The answer's text and usage; these tests read streams that may end in an error event. */
const textOf = (kind: 'completions' | 'chat', stream: boolean, text: string) =>
  readAnswer(kind, stream, text, false);

const PROMPT = 'A long shared document about moving llama.cpp slots. '.repeat(4);

describe('gateway prefill/decode disaggregation with llama.cpp replicas (slot save/restore)', () => {
  it('moves the slot: the text a colocated replica gives, the prompt cached on the decode replica, slots given back', async () => {
    const dir: SlotDir = new Map();
    const prefill = await fake(dir);
    const decode = await fake(dir);
    const mixed = await fake(new Map());
    const pd = await gateway([
      { fake: prefill, role: 'prefill' },
      { fake: decode, role: 'decode' },
    ]);
    const colocated = await gateway([{ fake: mixed, role: 'mixed' }]);
    for (const { kind, stream, path, body } of requestShapes(
      PROMPT,
      { max_tokens: 6, temperature: 0 },
      false,
    )) {
      prefill.log.length = 0;
      decode.log.length = 0;
      const a = await post(pd.url, path, body);
      const b = await post(colocated.url, path, body);
      assert.equal(a.status, 200, a.text);
      assert.equal(a.headers.get('x-preble-pd-handoff'), 'kv');
      assert.equal(a.headers.get('x-preble-prefill-replica'), prefill.url);
      assert.equal(a.headers.get('x-preble-replica'), decode.url);
      const pdAnswer = textOf(kind, stream, a.text);
      assert.equal(pdAnswer.out, textOf(kind, stream, b.text).out, `${kind} stream=${stream}`);
      assert.equal(pdAnswer.out.length, 6);
      // llama-server recomputes the last prompt token only.
      assert.equal(pdAnswer.usage.prompt_tokens_details.cached_tokens, pdAnswer.usage.prompt_tokens - 1);
      // The order: prefill pinned to a slot for one token, save it, restore into a decode slot, decode there.
      assert.deepEqual(prefill.log, ['completion 0 max=1', 'save 0']);
      assert.deepEqual(decode.log, ['restore 0', 'completion 0 max=6']);
    }
    assert.equal(dir.size, 1, 'one slot file per prefill slot, reused');
    await settle(pd.counts);
    assert.equal(await gatewayMetric(pd.gateway, 'preble_pd_recomputes_total'), 0);
    const t = await pd.gateway.metrics.registry.getSingleMetricAsString('preble_pd_kv_transfer_seconds');
    assert.match(t, /preble_pd_kv_transfer_seconds_count 4/);
  });

  it('a failed slot save: the decode replica computes the prompt itself (colocated), the text unchanged', async () => {
    const dir: SlotDir = new Map();
    const prefill = await fake(dir, { failSave: true });
    const decode = await fake(dir);
    const mixed = await fake(new Map());
    const pd = await gateway([
      { fake: prefill, role: 'prefill' },
      { fake: decode, role: 'decode' },
    ]);
    const colocated = await gateway([{ fake: mixed, role: 'mixed' }]);
    const body = { prompt: PROMPT, max_tokens: 5, temperature: 0 };
    const a = await post(pd.url, '/v1/completions', body);
    const b = await post(colocated.url, '/v1/completions', body);
    assert.equal(a.status, 200, a.text);
    assert.equal(a.headers.get('x-preble-pd-handoff'), 'recompute');
    assert.match(a.headers.get('x-preble-pd-recompute') ?? '', /disk full/);
    assert.equal(JSON.parse(a.text).choices[0].text, JSON.parse(b.text).choices[0].text);
    assert.equal(JSON.parse(a.text).usage.prompt_tokens_details.cached_tokens, 0);
    assert.deepEqual(decode.log, ['completion 0 max=5'], 'no restore of a slot never saved');
    assert.equal(await gatewayMetric(pd.gateway, 'preble_pd_recomputes_total', { reason: 'save_failed' }), 1);
    await settle(pd.counts);
  });

  it('a failed restore: the decode replica computes the prompt itself in the slot it reserved', async () => {
    const dir: SlotDir = new Map();
    const prefill = await fake(dir);
    const decode = await fake(dir, { failRestore: true });
    const pd = await gateway([
      { fake: prefill, role: 'prefill' },
      { fake: decode, role: 'decode' },
    ]);
    const a = await post(pd.url, '/v1/completions', { prompt: PROMPT, max_tokens: 5, stream: true });
    assert.equal(a.status, 200, a.text);
    assert.equal(a.headers.get('x-preble-pd-handoff'), 'recompute');
    assert.equal(textOf('completions', true, a.text).usage.prompt_tokens_details.cached_tokens, 0);
    assert.deepEqual(decode.log, ['restore 0', 'completion 0 max=5']);
    assert.equal(
      await gatewayMetric(pd.gateway, 'preble_pd_recomputes_total', { reason: 'restore_failed' }),
      1,
    );
    await settle(pd.counts);
  });

  it('a failing prefill replica is retried on another prefill replica', async () => {
    const dir: SlotDir = new Map();
    const bad = await fake(dir, { failCompletions: 100 });
    const good = await fake(dir);
    const decode = await fake(dir);
    const pd = await gateway([
      { fake: bad, role: 'prefill' },
      { fake: good, role: 'prefill' },
      { fake: decode, role: 'decode' },
    ]);
    for (let i = 0; i < 3; i++) {
      const a = await post(pd.url, '/v1/completions', { prompt: `${i} ${PROMPT}`, max_tokens: 3 });
      assert.equal(a.status, 200, a.text);
      assert.equal(a.headers.get('x-preble-prefill-replica'), good.url);
      assert.equal(a.headers.get('x-preble-pd-handoff'), 'kv');
    }
    await settle(pd.counts);
  });

  it('a decode leg failing before its first byte runs again, restoring the slot again', async () => {
    const dir: SlotDir = new Map();
    const prefill = await fake(dir);
    const decode = await fake(dir, { failCompletions: 1 });
    const pd = await gateway([
      { fake: prefill, role: 'prefill' },
      { fake: decode, role: 'decode' },
    ]);
    const a = await post(pd.url, '/v1/completions', { prompt: PROMPT, max_tokens: 4, stream: true });
    assert.equal(a.status, 200, a.text);
    assert.deepEqual(decode.log, ['restore 0', 'completion 0 max=4', 'restore 0', 'completion 0 max=4']);
    const { usage } = textOf('completions', true, a.text);
    assert.equal(usage.prompt_tokens_details.cached_tokens, usage.prompt_tokens - 1);
    await settle(pd.counts);
  });

  it('concurrent requests never share a slot between a restore and its decode, and give every slot back', async () => {
    const dir: SlotDir = new Map();
    const prefill = await fake(dir, { slots: 2, delayMs: 20 });
    const decode = await fake(dir, { slots: 2, delayMs: 20 });
    const pd = await gateway([
      { fake: prefill, role: 'prefill' },
      { fake: decode, role: 'decode' },
    ]);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        post(pd.url, '/v1/completions', { prompt: `${i}: ${PROMPT}`, max_tokens: 3, stream: i % 2 === 0 }),
      ),
    );
    for (const a of answers) {
      assert.equal(a.status, 200, a.text);
      assert.equal(a.headers.get('x-preble-pd-handoff'), 'kv');
    }
    assert.equal(prefill.conflicts + decode.conflicts, 0);
    assert.ok(dir.size <= 2, 'at most one file per prefill slot');
    await settle(pd.counts);
  });

  it('a client that leaves during the decode leg gives back both slots and every count', async () => {
    const dir: SlotDir = new Map();
    const prefill = await fake(dir);
    const decode = await fake(dir, { delayMs: 300 });
    const pd = await gateway([
      { fake: prefill, role: 'prefill' },
      { fake: decode, role: 'decode' },
    ]);
    const leave = new AbortController();
    const pending = post(pd.url, '/v1/completions', { prompt: PROMPT, max_tokens: 3 }, leave.signal);
    for (let i = 0; i < 200 && !decode.log.some((l) => l.startsWith('completion')); i++)
      await new Promise((r) => setTimeout(r, 5));
    leave.abort();
    await assert.rejects(pending);
    await settle(pd.counts);
  });

  it('refuses a fleet whose prefill and decode replicas speak different PD protocols', async () => {
    const dir: SlotDir = new Map();
    const a = await fake(dir);
    await assert.rejects(
      startGateway(
        [
          { url: a.url, role: 'prefill', dialect: 'llamacpp' },
          { url: 'http://127.0.0.1:9', role: 'decode', dialect: 'vllm' },
        ],
        {},
        'distserve',
      ),
      /need one protocol/,
    );
  });
});
