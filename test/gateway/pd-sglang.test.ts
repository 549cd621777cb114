import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { FaultSettings } from '../../src/emulator/faults.ts';
import { createEngineServer, type EngineServer } from '../../src/emulator/server.ts';
import type { GatewayOptions, ReplicaSpec } from '../../src/gateway/server.ts';
import { MODEL, startGateway } from './helpers.ts';
import { postJson, readAnswer as read, requestShapes, settle } from './pd-helpers.ts';

// SGLang-style prefill/decode disaggregation (src/gateway/pd-sglang.ts): the gateway sends the
// request to a `preble engine --role prefill` and a `--role decode` together, with bootstrap_host,
// bootstrap_port and bootstrap_room; the decode engine pulls the room's KV from the prefill engine.

const servers: EngineServer[] = [];
const gateways: { close(): Promise<void> }[] = [];
after(async () => {
  for (const g of gateways) await g.close();
  await Promise.all(servers.map((s) => s.close(100)));
});

async function engine(role: 'mixed' | 'prefill' | 'decode', faults: Partial<FaultSettings> = {}) {
  const server = createEngineServer({ timeScale: 1000, role, faults, kvHoldSeconds: 2 });
  servers.push(server);
  const { url } = await server.listen(0, '127.0.0.1');
  return { server, url };
}

async function pdGateway(replicas: ReplicaSpec[], options: Partial<GatewayOptions> = {}) {
  const g = await startGateway(
    replicas.map((r) => ({ dialect: 'sglang' as const, ...(r as object) }) as ReplicaSpec),
    { drainSeconds: 1, ...options },
    'distserve',
  );
  gateways.push(g.gateway);
  const counts = () => ({
    policy: g.policyInflight(),
    replicas: g.gateway.replicas.all().reduce((s, r) => s + r.inflight, 0),
  });
  return { ...g, counts };
}

const post = (url: string, path: string, body: Record<string, unknown>, signal?: AbortSignal) =>
  postJson(url, path, body, MODEL, signal);

const PROMPT = 'A long shared document about bootstrap rooms. '.repeat(8);

describe('gateway prefill/decode disaggregation, SGLang-style (bootstrap rooms, emulated engines)', () => {
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
    for (const { kind, stream, path, body } of requestShapes(PROMPT, { max_tokens: 12 })) {
      const a = await post(pd.url, path, body);
      const b = await post(colocated.url, path, body);
      assert.equal(a.status, 200, a.text);
      assert.equal(a.headers.get('x-preble-prefill-replica'), prefill.url);
      assert.equal(a.headers.get('x-preble-replica'), decode.url);
      const pdAnswer = read(kind, stream, a.text);
      assert.equal(pdAnswer.out, read(kind, stream, b.text).out, `${kind} stream=${stream}`);
      assert.equal(pdAnswer.out.length, 12);
      assert.equal(
        pdAnswer.usage.prompt_tokens_details.cached_tokens,
        pdAnswer.usage.prompt_tokens,
        'no recompute',
      );
    }
    await settle(pd.counts);
    assert.equal(prefill.server.kvHolder!.size, 0, 'every room was pulled');
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
    for (let i = 0; i < 4; i++) {
      const a = await post(pd.url, '/v1/completions', { prompt: `${i} ${PROMPT}`, max_tokens: 4 });
      assert.equal(a.status, 200, a.text);
      assert.equal(a.headers.get('x-preble-prefill-replica'), good.url);
    }
    await settle(pd.counts);
  });

  it('a decode replica failing before its first byte: both legs run again, on another decode replica', async () => {
    const prefill = await engine('prefill');
    const bad = await engine('decode', { failRate: 1 });
    const good = await engine('decode');
    const pd = await pdGateway(
      [
        { url: prefill.url, role: 'prefill' },
        { url: bad.url, role: 'decode' },
        { url: good.url, role: 'decode' },
      ],
      { breaker: { failureThreshold: 1, openSeconds: 60 } },
    );
    for (let i = 0; i < 4; i++) {
      const a = await post(pd.url, '/v1/completions', {
        prompt: `${i} ${PROMPT}`,
        max_tokens: 4,
        stream: true,
      });
      assert.equal(a.status, 200, a.text);
      assert.equal(a.headers.get('x-preble-replica'), good.url);
      assert.equal(read('completions', true, a.text).out.length, 4);
    }
    await settle(pd.counts);
  });

  it('a client that leaves aborts both legs and gives every count back', async () => {
    const prefill = await engine('prefill', { firstByteDelay: 0.3 });
    const decode = await engine('decode');
    const pd = await pdGateway([
      { url: prefill.url, role: 'prefill' },
      { url: decode.url, role: 'decode' },
    ]);
    const leave = new AbortController();
    const pending = post(pd.url, '/v1/completions', { prompt: PROMPT, max_tokens: 4 }, leave.signal);
    await new Promise((r) => setTimeout(r, 100));
    leave.abort();
    await assert.rejects(pending);
    await settle(pd.counts);
  });
});
