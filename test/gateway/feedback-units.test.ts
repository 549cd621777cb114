import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encode } from '@msgpack/msgpack';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import type { Tokens } from '../../src/core/types.ts';
import { StreamAggregator } from '../../src/gateway/aggregate.ts';
import { dialectOf } from '../../src/gateway/dialects.ts';
import { AttemptFeedback, cachedTokensEviction } from '../../src/gateway/feedback.ts';
import { KvEventSubscriber } from '../../src/gateway/kv-events.ts';
import { RecordingPolicy } from '../helpers/recording-policy.ts';

const counts = { promptTokens: 10, cachedTokens: 0, outputTokens: 2 };

function routed(): RecordingPolicy {
  const p = new RecordingPolicy(
    createGlobalPolicy('round-robin', { costModel: costModelPreset('mistral-7b-a6000') }),
  );
  p.instanceAdded(0, { kvCapacityTokens: 1000 }, 0);
  p.route({ id: 'r', tokens: Uint32Array.of(1, 2, 3), arrival: 0 }, 0);
  return p;
}

const feedbackCalls = (p: RecordingPolicy) =>
  p
    .of('r')
    .map((c) => [c.method, c.now] as const)
    .filter(([m]) => m !== 'route');

describe('AttemptFeedback: started dated from what the engine reports', () => {
  it('preble: at the first token, started = first token - prefill (scaled to the gateway clock)', () => {
    const p = routed();
    const f = new AttemptFeedback(p, 'r', dialectOf('preble'), 1, 1000);
    f.firstToken(5, { preble_timing: { queue_ms: 1, prefill_ms: 2 } });
    assert.deepEqual(feedbackCalls(p), [
      ['requestStarted', 3],
      ['requestFirstToken', 5],
    ]);
    f.finished(9, {}, counts);
    assert.deepEqual(feedbackCalls(p).at(-1), ['requestFinished', 9]);
  });

  it('never dates started before the dispatch', () => {
    const p = routed();
    const f = new AttemptFeedback(p, 'r', dialectOf('llamacpp'), 4, 1);
    f.firstToken(5, { timings: { prompt_ms: 9000 } });
    assert.deepEqual(feedbackCalls(p)[0], ['requestStarted', 4]);
  });

  it('vllm: held until the final report when the first chunk does not say, then dated from its metrics', () => {
    const p = routed();
    const f = new AttemptFeedback(p, 'r', dialectOf('vllm'), 0, 1);
    f.firstToken(5, {});
    assert.deepEqual(feedbackCalls(p), [], 'held');
    f.finished(9, { metrics: { time_to_first_token_ms: 1500 } }, counts);
    assert.deepEqual(feedbackCalls(p), [
      ['requestStarted', 3.5],
      ['requestFirstToken', 5],
      ['requestFinished', 9],
    ]);
  });

  it('vllm without per-request metrics: started at the first token, reported at the finish', () => {
    const p = routed();
    const f = new AttemptFeedback(p, 'r', dialectOf('vllm'), 0, 1);
    f.firstToken(5, {});
    f.finished(9, {}, counts);
    assert.deepEqual(feedbackCalls(p), [
      ['requestStarted', 5],
      ['requestFirstToken', 5],
      ['requestFinished', 9],
    ]);
  });

  it('sglang reports no admission: started and first token together, at once', () => {
    const p = routed();
    const f = new AttemptFeedback(p, 'r', dialectOf('sglang'), 0, 1);
    f.firstToken(5, {});
    assert.deepEqual(feedbackCalls(p), [
      ['requestStarted', 5],
      ['requestFirstToken', 5],
    ]);
  });

  it('a failure after a held first token reports what was learnt, then the failure; before any token, only the failure', () => {
    const p = routed();
    const f = new AttemptFeedback(p, 'r', dialectOf('vllm'), 0, 1);
    f.firstToken(5, {});
    f.failed(7);
    f.failed(8);
    assert.deepEqual(feedbackCalls(p), [
      ['requestStarted', 5],
      ['requestFirstToken', 5],
      ['requestFailed', 7],
    ]);
    const q = routed();
    new AttemptFeedback(q, 'r', dialectOf('preble'), 0, 1).failed(3);
    assert.deepEqual(feedbackCalls(q), [['requestFailed', 3]]);
  });
});

describe('cachedTokensEviction', () => {
  const tokens = new Uint32Array(100);
  it('reports the cached share when below the policy match, in the gateway tokens', () => {
    assert.equal(
      cachedTokensEviction(tokens, 80, { promptTokens: 100, cachedTokens: 40, outputTokens: 1 }),
      40,
    );
    // The engine's tokens differ from the gateway's: its share is kept.
    assert.equal(
      cachedTokensEviction(tokens, 80, { promptTokens: 50, cachedTokens: 20, outputTokens: 1 }),
      40,
    );
  });
  it('says nothing when the cache served at least what the policy believed', () => {
    assert.equal(
      cachedTokensEviction(tokens, 40, { promptTokens: 100, cachedTokens: 40, outputTokens: 1 }),
      undefined,
    );
    assert.equal(
      cachedTokensEviction(tokens, 0, { promptTokens: 100, cachedTokens: 0, outputTokens: 1 }),
      undefined,
    );
    assert.equal(
      cachedTokensEviction(tokens, 80, { promptTokens: 0, cachedTokens: 0, outputTokens: 1 }),
      undefined,
    );
  });
});

describe('dialects ask every replica to stream', () => {
  it('with usage, and what each engine needs to date the admission', () => {
    const body = { model: 'm', prompt: 'x', stream: false, stream_options: { other: 1 } };
    for (const name of ['preble', 'vllm', 'sglang', 'llamacpp'] as const) {
      const shaped = dialectOf(name).shapeBody(body);
      assert.equal(shaped['stream'], true, name);
      assert.deepEqual(shaped['stream_options'], { other: 1, include_usage: true }, name);
    }
    assert.equal(dialectOf('llamacpp').shapeBody(body)['timings_per_token'], true);
    assert.equal(dialectOf('vllm').shapeBody(body)['include_metrics'], true);
    assert.equal(dialectOf('vllm').shapeBody({ ...body, include_metrics: false })['include_metrics'], false);
  });
  it('each declares its feedback', () => {
    assert.equal(dialectOf('preble').feedback.started, 'engine');
    assert.equal(dialectOf('llamacpp').feedback.evictions, 'cached-tokens');
    assert.equal(dialectOf('sglang').feedback.started, 'first-token');
  });
});

describe('StreamAggregator', () => {
  it('gathers choices by index, finish reasons, usage and the response fields', () => {
    const agg = new StreamAggregator('chat');
    const head = {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: 7,
      model: 'm',
      system_fingerprint: 'fp',
    };
    agg.push({
      ...head,
      choices: [{ index: 1, delta: { role: 'assistant', content: '' }, finish_reason: null }],
    });
    agg.push({
      ...head,
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
    });
    agg.push({ ...head, choices: [{ index: 1, delta: { content: 'wor' }, finish_reason: null }] });
    agg.push({ ...head, choices: [{ index: 0, delta: { content: 'hel' }, finish_reason: null }] });
    agg.push({ ...head, choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }] });
    agg.push({ ...head, choices: [{ index: 1, delta: {}, finish_reason: 'length' }] });
    agg.push({ ...head, choices: [], usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 } });
    assert.deepEqual(agg.result(), {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 7,
      model: 'm',
      system_fingerprint: 'fp',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'hello' }, logprobs: null, finish_reason: 'stop' },
        { index: 1, message: { role: 'assistant', content: 'wor' }, logprobs: null, finish_reason: 'length' },
      ],
      usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
    });
  });
});

describe("KV events in vLLM's wire format", () => {
  const seq = (n: number) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(BigInt(n));
    return b;
  };
  const message = (n: number, events: unknown[]) => [
    Buffer.from(''),
    seq(n),
    Buffer.from(encode([1.5, events], { useBigInt64: true })),
  ];

  it('maps block hashes (integers or bytes) to token paths from BlockStored, and removals to evictions', () => {
    const seen: [number[], number][] = [];
    const sub = new KvEventSubscriber('tcp://127.0.0.1:1', (path: Tokens, kept) =>
      seen.push([[...path], kept]),
    );
    const h1 = Uint8Array.of(1, 2, 3);
    sub.receive(message(0, [['BlockStored', [h1, 2n ** 63n], null, [1, 2, 3, 4], 2, null, null]]));
    sub.receive(message(1, [['BlockStored', [7], 2n ** 63n, [5, 6], 2, null, null]]));
    assert.equal(sub.map.size, 3);
    sub.receive(message(2, [['BlockRemoved', [7, 99], null]]));
    assert.deepEqual(seen, [[[1, 2, 3, 4, 5, 6], 4]]);
    sub.receive(message(3, [['BlockRemoved', [Uint8Array.of(1, 2, 3)], null]]));
    assert.deepEqual(seen.at(-1), [[1, 2], 0]);
    assert.equal(sub.missed, 0n);
  });

  it('a cleared cache evicts every root path; a sequence gap is counted; an unknown parent is skipped', () => {
    const seen: [number[], number][] = [];
    const sub = new KvEventSubscriber('tcp://127.0.0.1:1', (path: Tokens, kept) =>
      seen.push([[...path], kept]),
    );
    sub.receive(message(0, [['BlockStored', [1, 2], null, [1, 1, 2, 2], 2, null, null]]));
    sub.receive(message(1, [['BlockStored', [3], null, [9, 9], 2, null, null]]));
    sub.receive(message(5, [['BlockStored', [4], 42, [7, 7], 2, null, null]]));
    assert.equal(sub.missed, 3n);
    assert.equal(sub.map.unknownParents, 1);
    sub.receive(message(6, [['AllBlocksCleared']]));
    assert.deepEqual(
      seen.sort((a, b) => a[0][0]! - b[0][0]!),
      [
        [[1, 1], 0],
        [[9, 9], 0],
      ],
    );
    assert.equal(sub.map.size, 0);
  });
});
