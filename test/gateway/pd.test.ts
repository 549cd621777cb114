import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import type { GlobalPolicy } from '../../src/core/types.ts';
import type { FaultSettings } from '../../src/emulator/faults.ts';
import { createEngineServer, type EngineServer } from '../../src/emulator/server.ts';
import { parseGatewayConfig } from '../../src/gateway/config.ts';
import { createGateway, type GatewayOptions, type ReplicaSpec } from '../../src/gateway/server.ts';
import { gatewayMetric, MODEL, startGateway } from './helpers.ts';
import { type Json, postJson, requestShapes, settle, sseAnswer } from './pd-helpers.ts';

// Prefill/decode disaggregation through the gateway, over real HTTP: `preble engine --role prefill`
// and `--role decode` servers in this process (the KV is pulled over HTTP between them), the
// gateway routing with distserve.

const servers: EngineServer[] = [];
const gateways: { close(): Promise<void> }[] = [];
after(async () => {
  for (const g of gateways) await g.close();
  await Promise.all(servers.map((s) => s.close(100)));
});

async function engine(
  role: 'mixed' | 'prefill' | 'decode',
  faults: Partial<FaultSettings> = {},
  extra: { kvHoldSeconds?: number } = {},
) {
  const server = createEngineServer({ timeScale: 1000, role, faults, ...extra });
  servers.push(server);
  const { url } = await server.listen(0, '127.0.0.1');
  return { server, url };
}

async function pdGateway(
  replicas: ReplicaSpec[],
  options: Partial<GatewayOptions> = {},
  policy = 'distserve',
) {
  const g = await startGateway(replicas, { drainSeconds: 1, ...options }, policy);
  gateways.push(g.gateway);
  const counts = () => ({
    policy: g.policyInflight(),
    replicas: g.gateway.replicas.all().reduce((s, r) => s + r.inflight, 0),
  });
  return { ...g, counts };
}

const post = (url: string, path: string, body: Record<string, unknown>, signal?: AbortSignal) =>
  postJson(url, path, body, MODEL, signal);

function answerText(kind: 'completions' | 'chat', json: Json): string {
  return kind === 'chat' ? json['choices'][0].message.content : json['choices'][0].text;
}

describe('gateway prefill/decode disaggregation (distserve, emulated engines)', () => {
  it('gives the text a mixed replica gives, streamed and not, chat and completions, with the prompt cached on the decode replica', async () => {
    const prefill = await engine('prefill');
    const decode = await engine('decode');
    const mixed = await engine('mixed');
    const pd = await pdGateway([
      { url: prefill.url, role: 'prefill' },
      { url: decode.url, role: 'decode' },
    ]);
    const colocated = await startGateway([mixed.url]);
    gateways.push(colocated.gateway);
    const prompt = 'A long shared document about disaggregated serving. '.repeat(8);
    for (const { kind, stream, path, body } of requestShapes(prompt, { max_tokens: 12 })) {
      const a = await post(pd.url, path, body);
      const b = await post(colocated.url, path, body);
      assert.equal(a.status, 200, a.text);
      assert.equal(a.headers.get('x-preble-prefill-replica'), prefill.url);
      assert.equal(a.headers.get('x-preble-replica'), decode.url);
      const [textA, usageA] = stream
        ? [sseAnswer(a.text).out, sseAnswer(a.text).usage]
        : [answerText(kind, JSON.parse(a.text)), JSON.parse(a.text).usage];
      const textB = stream ? sseAnswer(b.text).out : answerText(kind, JSON.parse(b.text));
      assert.equal(textA, textB, `${kind} stream=${stream}`);
      assert.equal(textA.length, 12);
      assert.equal(usageA.prompt_tokens_details.cached_tokens, usageA.prompt_tokens, 'no recompute');
      assert.equal(usageA.completion_tokens, 12);
    }
    await settle(pd.counts);
    assert.equal(prefill.server.kvHolder!.size, 0, 'every KV was pulled');
    const m = await pd.gateway.metrics.registry.getSingleMetricAsString('preble_pd_prefill_seconds');
    assert.match(m, /preble_pd_prefill_seconds_count 4/);
    const t = await pd.gateway.metrics.registry.getSingleMetricAsString('preble_pd_kv_transfer_seconds');
    assert.match(t, /preble_pd_kv_transfer_seconds_count 4/);
    const d = await pd.gateway.metrics.registry.getSingleMetricAsString('preble_pd_decode_ttft_seconds');
    assert.match(d, /preble_pd_decode_ttft_seconds_count 4/);
  });

  it('routes both legs with the other disaggregated policies of the core (splitwise, prefix-pd)', async () => {
    for (const policy of ['splitwise', 'prefix-pd']) {
      const prefill = await engine('prefill');
      const decode = await engine('decode');
      const g = await pdGateway(
        [
          { url: prefill.url, role: 'prefill' },
          { url: decode.url, role: 'decode' },
        ],
        {},
        policy,
      );
      for (const stream of [false, true]) {
        const r = await post(g.url, '/v1/completions', {
          prompt: `${policy} places both legs ${stream}`,
          max_tokens: 6,
          stream,
        });
        assert.equal(r.status, 200, `${policy}: ${r.text}`);
        assert.equal(r.headers.get('x-preble-prefill-replica'), prefill.url, policy);
        assert.equal(r.headers.get('x-preble-replica'), decode.url, policy);
        const text = stream ? sseAnswer(r.text).out : JSON.parse(r.text).choices[0].text;
        assert.equal(text.length, 6, policy);
      }
      await settle(g.counts);
    }
  });

  it('a failing prefill replica is retried on another prefill replica', async () => {
    const bad = await engine('prefill', { failRate: 1 });
    const good = await engine('prefill');
    const decode = await engine('decode');
    const pd = await pdGateway([
      { url: bad.url, role: 'prefill' },
      { url: good.url, role: 'prefill' },
      { url: decode.url, role: 'decode' },
    ]);
    for (let i = 0; i < 3; i++) {
      const r = await post(pd.url, '/v1/completions', { prompt: `question ${i}`, max_tokens: 4 });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-preble-prefill-replica'), good.url);
    }
    assert.ok(
      (await gatewayMetric(pd.gateway, 'preble_upstream_attempts_total', {
        replica: '0',
        outcome: 'replica_error',
      })) >= 1,
    );
    await settle(pd.counts);
  });

  it('a decode failure before the first byte runs the decode leg again with the same KV (no second prefill)', async () => {
    const prefill = await engine('prefill');
    const bad = await engine('decode', { failRate: 1 });
    const good = await engine('decode');
    const pd = await pdGateway([
      { url: prefill.url, role: 'prefill' },
      { url: bad.url, role: 'decode' },
      { url: good.url, role: 'decode' },
    ]);
    for (const stream of [false, true]) {
      const r = await post(pd.url, '/v1/completions', {
        prompt: `decode retry ${stream}`,
        max_tokens: 5,
        stream,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('x-preble-replica'), good.url);
      const text = stream ? sseAnswer(r.text).out : JSON.parse(r.text).choices[0].text;
      assert.equal(text.length, 5);
    }
    assert.equal(
      await gatewayMetric(pd.gateway, 'preble_upstream_attempts_total', { replica: '0', outcome: 'ok' }),
      2,
      'one prefill per request',
    );
    assert.ok((await gatewayMetric(pd.gateway, 'preble_pd_leg_retries_total', { leg: 'decode' })) >= 1);
    await settle(pd.counts);
  });

  it('a decode leg that took the KV and then failed makes the gateway prefill again', async () => {
    const prefill = await engine('prefill');
    const decode = await engine('decode', { stallAfter: 0 });
    const pd = await pdGateway(
      [
        { url: prefill.url, role: 'prefill' },
        { url: decode.url, role: 'decode' },
      ],
      { timeouts: { requestSeconds: 1.5, firstTokenSeconds: 1.5 } },
    );
    const answer = post(pd.url, '/v1/completions', { prompt: 'stalled once', max_tokens: 4 });
    // The first decode try pulled the KV and stalled: heal the replica for the tries that follow.
    for (let i = 0; i < 500 && decode.server.faults.active === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    assert.equal(decode.server.faults.active, 1);
    decode.server.faults.update({ stallAfter: null });
    const r = await answer;
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.parse(r.text).choices[0].text.length, 4);
    assert.equal(
      await gatewayMetric(pd.gateway, 'preble_upstream_attempts_total', { replica: '0', outcome: 'ok' }),
      2,
      'prefilled twice',
    );
    assert.equal(await gatewayMetric(pd.gateway, 'preble_pd_leg_retries_total', { leg: 'prefill' }), 1);
    await settle(pd.counts);
  });

  it('a hung prefill meets its own timeout and the request goes to another prefill replica', async () => {
    const hung = await engine('prefill', { hang: true });
    const good = await engine('prefill');
    const decode = await engine('decode');
    const pd = await pdGateway(
      [
        { url: hung.url, role: 'prefill' },
        { url: good.url, role: 'prefill' },
        { url: decode.url, role: 'decode' },
      ],
      { timeouts: { prefillSeconds: 1.5 } },
    );
    const r = await post(pd.url, '/v1/completions', { prompt: 'slow prefill', max_tokens: 3 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-preble-prefill-replica'), good.url);
    assert.equal(
      await gatewayMetric(pd.gateway, 'preble_upstream_attempts_total', { replica: '0', outcome: 'timeout' }),
      1,
    );
    await settle(pd.counts);
  });

  it('a decode leg that fails after the client got bytes ends the stream with an error event', async () => {
    const prefill = await engine('prefill');
    const decode = await engine('decode', { stallAfter: 2 });
    const pd = await pdGateway(
      [
        { url: prefill.url, role: 'prefill' },
        { url: decode.url, role: 'decode' },
      ],
      { timeouts: { idleSeconds: 0.5 } },
    );
    const r = await post(pd.url, '/v1/completions', { prompt: 'cut short', max_tokens: 8, stream: true });
    assert.equal(r.status, 200);
    assert.match(r.text, /"text":"lo"|"text":"l"/);
    assert.match(r.text, /data: \{"error":\{"message":"replica .* timed out/);
    assert.equal(
      await gatewayMetric(pd.gateway, 'preble_pd_leg_retries_total'),
      0,
      'nothing retried once bytes went out',
    );
    await settle(pd.counts);
  });

  it('a client that leaves during the prefill or the decode leg cancels both and gives every count back', async () => {
    const prefill = await engine('prefill', { firstByteDelay: 30 });
    const decode = await engine('decode', { hang: true });
    const pd = await pdGateway([
      { url: prefill.url, role: 'prefill' },
      { url: decode.url, role: 'decode' },
    ]);
    // Leaves during the prefill leg.
    const c1 = new AbortController();
    const r1 = post(pd.url, '/v1/completions', { prompt: 'leaving early', max_tokens: 3 }, c1.signal);
    for (let i = 0; i < 500 && pd.counts().replicas === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(pd.counts(), { policy: 1, replicas: 1 });
    c1.abort();
    await assert.rejects(r1);
    await settle(pd.counts);
    // Leaves during the decode leg (the decode replica hangs).
    prefill.server.faults.update({ firstByteDelay: 0 });
    const c2 = new AbortController();
    const r2 = post(
      pd.url,
      '/v1/completions',
      { prompt: 'leaving later', max_tokens: 3, stream: true },
      c2.signal,
    );
    for (let i = 0; i < 500 && decode.server.faults.active === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    assert.equal(decode.server.faults.active, 1);
    assert.deepEqual(pd.counts(), { policy: 1, replicas: 1 });
    c2.abort();
    await assert.rejects(r2);
    await settle(pd.counts);
    assert.equal(await gatewayMetric(pd.gateway, 'preble_refused_total', { reason: 'client_closed' }), 2);
  });

  it('refuses at start a fleet its policy cannot use, in one line', () => {
    const costModel = costModelPreset(MODEL);
    const make = (policy: string, replicas: ReplicaSpec[]) =>
      createGateway({
        createPolicy: () => createGlobalPolicy(policy, { costModel }),
        replicas,
        replicaKvTokens: 1000,
        logLevel: 'silent',
        health: { intervalSeconds: 0 },
      });
    assert.throws(
      () => make('distserve', [{ url: 'http://127.0.0.1:1' }]),
      /needs at least one prefill and one decode replica/,
    );
    assert.throws(
      () =>
        make('e2', [
          { url: 'http://127.0.0.1:1', role: 'prefill' },
          { url: 'http://127.0.0.1:2', role: 'decode' },
        ]),
      /runs whole requests on mixed replicas/,
    );
    assert.throws(
      () =>
        make('distserve', [
          { url: 'http://127.0.0.1:1', role: 'prefill', dialect: 'sglang' },
          { url: 'http://127.0.0.1:2', role: 'decode' },
        ]),
      /need one protocol/,
    );
    assert.throws(
      () => parseGatewayConfig({ port: 0, policy: 'distserve', replicas: ['http://127.0.0.1:1'] }, 'gw.yaml'),
      /gw\.yaml: replicas: policy 'distserve' is disaggregated/,
    );
    const ok = parseGatewayConfig({
      port: 0,
      policy: 'distserve',
      replicas: [
        { url: 'http://127.0.0.1:1', role: 'prefill' },
        { url: 'http://127.0.0.1:2', role: 'decode', dialect: 'vllm' },
      ],
    });
    assert.deepEqual(
      ok.replicas.map((r) => r.role),
      ['prefill', 'decode'],
    );
  });

  it('tells the policy each leg in the contract order, and each try ends exactly once', async () => {
    const prefill = await engine('prefill');
    const bad = await engine('decode', { failRate: 1 });
    const good = await engine('decode');
    const log: string[] = [];
    const costModel = costModelPreset(MODEL);
    const pd = await pdGateway(
      [
        { url: prefill.url, role: 'prefill' },
        { url: bad.url, role: 'decode' },
        { url: good.url, role: 'decode' },
      ],
      { createPolicy: () => recording(createGlobalPolicy('distserve', { costModel }), log) },
    );
    const first = await post(pd.url, '/v1/completions', { prompt: 'order one', max_tokens: 3 });
    assert.equal(first.status, 200);
    // distserve rotates its decode pick: the first request meets the failing decode replica first.
    assert.deepEqual(strip(log), [
      'route',
      'requestStarted',
      'requestFirstToken',
      'kvReady',
      'routeDecode',
      'routeDecode',
      'kvArrived',
      'requestFinished',
    ]);
    assert.equal(new Set(log.map((l) => l.split(':')[1])).size, 1, 'one try, one id');
    log.length = 0;
    const second = await post(pd.url, '/v1/completions', { prompt: 'order two', max_tokens: 3 });
    assert.equal(second.status, 200);
    const calls = strip(log);
    assert.deepEqual(calls.slice(0, 5), [
      'route',
      'requestStarted',
      'requestFirstToken',
      'kvReady',
      'routeDecode',
    ]);
    assert.deepEqual(calls.slice(-2), ['kvArrived', 'requestFinished']);
    assert.equal(calls.filter((c) => c === 'requestFinished' || c === 'requestFailed').length, 1);
    await settle(pd.counts);
  });

  it('lists and adds replicas with roles through the admin API', async () => {
    const prefill = await engine('prefill');
    const decode = await engine('decode');
    const adminKey = 'admin-key-0123456789';
    const pd = await pdGateway(
      [
        { url: prefill.url, role: 'prefill' },
        { url: decode.url, role: 'decode' },
      ],
      {
        auth: { adminKey },
      },
    );
    const headers = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' };
    const list = (await (await fetch(`${pd.url}/admin/replicas`, { headers })).json()) as Json;
    assert.deepEqual(
      list['replicas'].map((r: Json) => r['role']),
      ['prefill', 'decode'],
    );
    const extra = await engine('decode');
    const added = await fetch(`${pd.url}/admin/replicas`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: extra.url, role: 'decode', model: MODEL }),
    });
    assert.equal(added.status, 201);
    assert.equal(((await added.json()) as Json)['role'], 'decode');
    const colocated = await startGateway([{ url: extra.url }], { auth: { adminKey } });
    gateways.push(colocated.gateway);
    const refused = await fetch(`${colocated.url}/admin/replicas`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: prefill.url, role: 'prefill', model: MODEL }),
    });
    assert.equal(refused.status, 400);
    assert.match(((await refused.json()) as Json)['error'].message, /runs whole requests on mixed replicas/);
  });
});

const RECORDED = new Set([
  'route',
  'requestStarted',
  'requestFirstToken',
  'kvReady',
  'routeDecode',
  'kvArrived',
  'requestFinished',
  'requestFailed',
]);

/** The policy, its per-request calls logged as `method:id`. */
function recording(policy: GlobalPolicy, log: string[]): GlobalPolicy {
  return new Proxy(policy, {
    get(target, prop, _receiver) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (typeof prop === 'string' && RECORDED.has(prop)) {
          const first = args[0] as { id?: string } | string;
          log.push(`${prop}:${typeof first === 'string' ? first : first.id}`);
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

function strip(log: readonly string[]): string[] {
  return log.map((l) => l.split(':')[0]!);
}
