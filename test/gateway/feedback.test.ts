import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import { createEngineServer, type EngineServerOptions } from '../../src/emulator/server.ts';
import { createGateway, type Gateway, type ReplicaSpec } from '../../src/gateway/server.ts';
import { encodeChars } from '../../src/text/chars-tokenizer.ts';
import { RecordingPolicy } from '../helpers/recording-policy.ts';
import { gatewayMetric, MODEL } from './helpers.ts';

// The feedback the contract promises (docs/design.md), from the live gateway in front of `preble
// engine` replicas over real HTTP: route -> requestStarted -> requestFirstToken -> finished, for
// streamed and non-streamed completions and chats, and evictions through KV events or cached tokens.

const TIME_SCALE = 1000;
const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of closers.reverse()) await c();
});

async function engine(options: EngineServerOptions = {}) {
  const server = createEngineServer({ timeScale: TIME_SCALE, ...options });
  const { url } = await server.listen(0, '127.0.0.1');
  closers.push(() => server.close(1000));
  return { server, url };
}

async function gateway(replicas: readonly ReplicaSpec[], policy = 'round-robin') {
  const costModel = costModelPreset(MODEL);
  const recorders: RecordingPolicy[] = [];
  const gw: Gateway = createGateway({
    createPolicy: () => {
      const r = new RecordingPolicy(createGlobalPolicy(policy, { costModel }));
      recorders.push(r);
      return r;
    },
    replicas,
    model: MODEL,
    replicaKvTokens: costModel.kvCapacityTokens,
    timeScale: TIME_SCALE,
    pollSeconds: 0,
    logLevel: 'silent',
    health: { intervalSeconds: 0 },
  });
  const url = await gw.listen(0, '127.0.0.1');
  closers.push(() => gw.close());
  assert.equal(recorders.length, 1, 'one model, one pool, one policy');
  return { gw, url, policy: recorders[0]! };
}

async function post(base: string, path: string, body: Record<string, unknown>) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, ...body }),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return text;
}

/** The text and usage of a streamed answer, gathered by the client. */
function gatherSse(text: string, chat: boolean) {
  const texts = new Map<number, string>();
  let usage: unknown;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6)) as {
      choices: { index: number; text?: string; delta?: { content?: string } }[];
      usage?: unknown;
    };
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices)
      texts.set(c.index, (texts.get(c.index) ?? '') + ((chat ? c.delta?.content : c.text) ?? ''));
  }
  return { texts: [...texts.entries()].sort((a, b) => a[0] - b[0]).map(([, t]) => t), usage };
}

/** Wait for a condition that the system reaches by itself (bounded: the test fails, never hangs). */
async function until(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await done()) return;
    await sleep(10);
  }
  assert.fail(`never happened: ${what}`);
}

const requests = [
  {
    name: 'completion',
    path: '/v1/completions',
    body: { prompt: 'The quick brown fox '.repeat(20), max_tokens: 6 },
  },
  {
    name: 'streamed completion',
    path: '/v1/completions',
    body: { prompt: 'jumps over the lazy dog '.repeat(20), max_tokens: 6, stream: true },
  },
  {
    name: 'chat',
    path: '/v1/chat/completions',
    body: { messages: [{ role: 'user', content: 'Tell me a story '.repeat(20) }], max_tokens: 5 },
  },
  {
    name: 'streamed chat',
    path: '/v1/chat/completions',
    body: {
      messages: [{ role: 'user', content: 'Another story please '.repeat(20) }],
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    },
  },
  {
    name: 'completion, n=2',
    path: '/v1/completions',
    body: { prompt: 'Two choices '.repeat(20), max_tokens: 4, n: 2 },
  },
  {
    name: 'streamed chat, n=3',
    path: '/v1/chat/completions',
    body: {
      messages: [{ role: 'user', content: 'Three choices '.repeat(20) }],
      max_tokens: 3,
      n: 3,
      stream: true,
    },
  },
] as const;

describe('policy feedback from the live gateway', () => {
  it('every request, streamed or not, gets route -> started -> first token -> finished, started dated at admission', async () => {
    const a = await engine();
    const b = await engine();
    const { url, policy } = await gateway([{ url: a.url }, { url: b.url }]);
    for (const r of requests) {
      const before = policy.calls.length;
      await post(url, r.path, r.body);
      const routes = policy.calls.slice(before).filter((c) => c.method === 'route');
      assert.equal(routes.length, 1, r.name);
      const calls = policy.of(routes[0]!.id);
      assert.deepEqual(
        calls.map((c) => c.method),
        ['route', 'requestStarted', 'requestFirstToken', 'requestFinished'],
        r.name,
      );
      const [route, started, first, finished] = calls as [(typeof calls)[0], ...typeof calls];
      assert.ok(route.now <= started!.now, `${r.name}: started after dispatch`);
      // preble engine reports each choice's prefill time (> 0): started is dated before the first token.
      assert.ok(
        started!.now < first!.now,
        `${r.name}: started ${started!.now} before first token ${first!.now}`,
      );
      assert.ok(first!.now <= finished!.now, r.name);
      const counts = (finished as { counts: { promptTokens: number; outputTokens: number } }).counts;
      assert.ok(counts.promptTokens > 0 && counts.outputTokens > 0, `${r.name}: real counts`);
    }
  });

  it('a non-streamed answer is what the replica answers directly (text, finish, usage), gathered from its stream', async () => {
    const behind = await engine();
    const direct = await engine(); // same seed and history: the same answers
    const { url } = await gateway([{ url: behind.url }]);
    for (const r of requests) {
      const body = { ...r.body, stream: false } as Record<string, unknown>;
      delete body['stream_options'];
      const viaGateway = JSON.parse(await post(url, r.path, body)) as Record<string, unknown>;
      const fromReplica = JSON.parse(await post(direct.url, r.path, body)) as Record<string, unknown>;
      assert.equal(viaGateway['object'], fromReplica['object'], r.name);
      assert.equal(viaGateway['model'], fromReplica['model'], r.name);
      assert.match(String(viaGateway['id']), /^(cmpl|chatcmpl)-/, r.name);
      assert.deepEqual(viaGateway['usage'], fromReplica['usage'], `${r.name}: usage`);
      const strip = (choices: unknown) =>
        (choices as Record<string, unknown>[]).map((c) => ({
          index: c['index'],
          finish_reason: c['finish_reason'],
          text: c['text'] ?? (c['message'] as { content: string }).content,
          role: (c['message'] as { role?: string } | undefined)?.role,
        }));
      assert.deepEqual(strip(viaGateway['choices']), strip(fromReplica['choices']), `${r.name}: choices`);
      // And streamed through the gateway, the same text and usage.
      const streamed = gatherSse(
        await post(url, r.path, { ...body, stream: true, stream_options: { include_usage: true } }),
        r.path.includes('chat'),
      );
      const again = JSON.parse(await post(direct.url, r.path, body)) as Record<string, unknown>;
      assert.deepEqual(
        streamed.texts,
        strip(again['choices']).map((c) => c.text),
        `${r.name}: streamed text`,
      );
      assert.deepEqual(streamed.usage, again['usage'], `${r.name}: streamed usage`);
    }
  });

  // Two prompts of 64 tokens, each with 2 output tokens, in a 100-token cache: the second evicts part of the first.
  const first = 'a'.repeat(40) + 'b'.repeat(24);
  const second = 'c'.repeat(64);

  it("evictions reach the policy through the engine's KV events (vLLM's ZMQ format)", async () => {
    const e = await engine({ kvTokens: 100, kvEvents: 'tcp://127.0.0.1:0', kvBlockSize: 16 });
    const endpoint = e.server.kvEvents!.endpoint;
    assert.match(endpoint, /^tcp:\/\/127\.0\.0\.1:\d+$/);
    const { gw, url, policy } = await gateway([{ url: e.url, kvEvents: endpoint }], 'e2');
    // A subscriber misses what was published before it joined: start once the engine sees it.
    await until('the gateway subscribed', () => e.server.kvEvents!.subscribers >= 1);
    await post(url, '/v1/completions', { prompt: first, max_tokens: 2 });
    await post(url, '/v1/completions', { prompt: second, max_tokens: 2 });
    await until('an eviction reached the policy', () => policy.evictions().length > 0);
    const tokens = encodeChars(first);
    for (const ev of policy.evictions()) {
      assert.equal(ev.instance, 0);
      // Block granularity: whole 16-token blocks of the first prompt's path.
      assert.equal(ev.path.length % 16, 0);
      assert.equal(ev.keptTokens, ev.path.length - 16);
      assert.deepEqual([...ev.path], [...tokens.subarray(0, ev.path.length)]);
    }
    assert.equal(await gatewayMetric(gw, 'preble_replica_evictions_total', { source: 'cached_tokens' }), 0);
    assert.ok((await gatewayMetric(gw, 'preble_replica_evictions_total', { source: 'kv_events' })) > 0);
  });

  it('without KV events, a response that cached less than the policy believed re-marks its view', async () => {
    const e = await engine({ kvTokens: 100 });
    const { gw, url, policy } = await gateway([{ url: e.url }], 'e2');
    await post(url, '/v1/completions', { prompt: first, max_tokens: 2 });
    await post(url, '/v1/completions', { prompt: second, max_tokens: 2 });
    assert.equal(policy.evictions().length, 0, 'nothing is known to be evicted yet');
    const again = JSON.parse(await post(url, '/v1/completions', { prompt: first, max_tokens: 2 })) as {
      usage: { prompt_tokens_details: { cached_tokens: number } };
    };
    const cached = again.usage.prompt_tokens_details.cached_tokens;
    const route = policy.calls.filter((c) => c.method === 'route').at(-1) as {
      decision: { matchedTokens: number };
    };
    assert.equal(route.decision.matchedTokens, 64, 'the policy believed the whole prompt cached');
    assert.ok(cached < 64, `the engine had evicted part of it (cached ${cached})`);
    const evictions = policy.evictions();
    assert.equal(evictions.length, 1);
    assert.deepEqual([...evictions[0]!.path], [...encodeChars(first)]);
    assert.equal(evictions[0]!.keptTokens, cached);
    assert.equal(await gatewayMetric(gw, 'preble_replica_evictions_total', { source: 'cached_tokens' }), 1);
  });

  it('a replica whose stream ends early (cleanly, no finish) fails the attempt; a non-streamed request is retried elsewhere', async () => {
    const cut = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(
          'data: {"id":"x","object":"text_completion","created":0,"model":"m","choices":[{"index":0,"text":"partial","finish_reason":null}]}\n\n',
        );
      });
    });
    await new Promise<void>((resolve) => cut.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((resolve) => cut.close(resolve)));
    const good = await engine();
    const { url, policy } = await gateway([
      { url: `http://127.0.0.1:${(cut.address() as { port: number }).port}` },
      { url: good.url },
    ]);
    const answer = JSON.parse(
      await post(url, '/v1/completions', { prompt: 'hello there', max_tokens: 3 }),
    ) as {
      choices: { text: string; finish_reason: string }[];
    };
    assert.equal(answer.choices[0]!.finish_reason, 'length');
    assert.notEqual(answer.choices[0]!.text, 'partial');
    const [firstTry, retry] = policy.calls.filter((c) => c.method === 'route').map((c) => c.id);
    assert.deepEqual(
      policy.of(firstTry!).map((c) => c.method),
      ['route', 'requestStarted', 'requestFirstToken', 'requestFailed'],
    );
    assert.deepEqual(
      policy.of(retry!).map((c) => c.method),
      ['route', 'requestStarted', 'requestFirstToken', 'requestFinished'],
    );
  });
});
