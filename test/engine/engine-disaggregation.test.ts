import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Engine } from '../../src/engine/engine.ts';
import { promptHash, withOutputs } from '../../src/engine/output-tokens.ts';
import type { PrefixCache } from '../../src/engine/prefix-cache.ts';
import type { EngineKvReady, Iteration } from '../../src/engine/types.ts';
import { concat, seq, simpleCostModel } from '../helpers/simple-cost-model.ts';

// The engine charges the cost model's iterationTime, which for the simple model is 1 ms per new
// token of the batch: a prefill chunk of n tokens costs n ms, a decode step 1 ms per request (its
// 10 ms decodeTime is what global policies estimate with; the engine never calls it).

function close(actual: number, expected: number): void {
  assert.ok(Math.abs(actual - expected) < 1e-12, `${actual} != ${expected}`);
}

const A = seq(100, 1);

describe('Engine roles: prefill leg, hold, release', () => {
  it('a prefill-only request yields its first token, reports kvReady and holds its KV', () => {
    const engine = new Engine({ costModel: simpleCostModel(1000), role: 'prefill' });
    engine.submit({ id: 'a', tokens: A, outputTokens: 4 }, 0);
    const first = engine.step(0);
    close(first.duration, 0.1); // 100 prompt tokens
    assert.deepEqual(first.events.started, [{ id: 'a', cachedTokens: 0 }]);
    assert.deepEqual(first.events.firstTokens, ['a']);
    assert.deepEqual(first.events.finished, []);
    assert.deepEqual(first.events.kvReady, [
      { id: 'a', path: A, kvTokens: 100, generated: 1, promptTokens: 100, cachedTokens: 0 },
    ]);
    // Out of the batch, its KV pinned and counted as used.
    assert.equal(engine.hasWork(), false);
    assert.equal(engine.request('a')?.phase, 'held');
    const snap = engine.snapshot();
    assert.deepEqual(
      [snap.running, snap.heldRequests, snap.heldKvTokens, snap.usedKvTokens, snap.freeKvTokens],
      [0, 1, 100, 100, 900],
    );
    assert.deepEqual([snap.promptTokensTotal, snap.generationTokensTotal], [100, 1]);
    engine.checkInvariants();

    // A second request sharing 60 tokens of the held prompt computes only its own 40.
    engine.submit({ id: 'b', tokens: concat(seq(60, 1), seq(40, 500)), outputTokens: 9 }, 0.1);
    const second = engine.step(0.1);
    close(second.duration, 0.04);
    assert.deepEqual(second.events.started, [{ id: 'b', cachedTokens: 60 }]);
    assert.equal(second.events.kvReady[0]!.cachedTokens, 60);
    assert.deepEqual(
      [engine.kvUsage().pinnedTokens, engine.kvUsage().heldTokens, engine.kvUsage().evictableTokens],
      [140, 200, 0], // held: 100 + 100, the shared 60 counted for each transfer
    );

    // The transfer ends: the KV is unpinned and stays cached (evictable); a second release is a no-op.
    assert.equal(engine.releaseKv('a'), true);
    assert.equal(engine.releaseKv('a'), false);
    assert.equal(engine.request('a'), undefined);
    const usage = engine.kvUsage();
    assert.deepEqual(
      [usage.cacheTokens, usage.pinnedTokens, usage.evictableTokens, usage.heldTokens],
      [140, 100, 40, 100],
    );
    engine.checkInvariants();
    assert.equal(engine.releaseKv('b'), true);
    assert.deepEqual([engine.kvUsage().pinnedTokens, engine.snapshot().heldRequests], [0, 0]);
  });

  it('a one-token request finishes on the prefill engine (nothing to decode, no kvReady)', () => {
    const engine = new Engine({ costModel: simpleCostModel(1000), role: 'prefill' });
    engine.submit({ id: 'a', tokens: A, outputTokens: 1 }, 0);
    const it = engine.step(0);
    assert.deepEqual(it.events.kvReady, []);
    assert.deepEqual(it.events.finished, [{ id: 'a', promptTokens: 100, cachedTokens: 0, outputTokens: 1 }]);
    assert.equal(engine.snapshot().heldRequests, 0);
  });

  it('a mixed engine runs prefill-only and whole requests side by side', () => {
    const engine = new Engine({ costModel: simpleCostModel(1000) });
    engine.submit({ id: 'p', tokens: A, outputTokens: 5 }, 0, { stopAfterPrefill: true });
    engine.submit({ id: 'w', tokens: seq(50, 1000), outputTokens: 3 }, 0);
    const first = engine.step(0);
    close(first.duration, 0.15);
    assert.deepEqual(first.events.firstTokens, ['p', 'w']);
    assert.deepEqual(
      first.events.kvReady.map((k) => k.id),
      ['p'],
    );
    // w decodes alone: 1 ms a step, two steps.
    close(engine.step(0.15).duration, 0.001);
    const last = engine.step(0.151);
    assert.deepEqual(
      last.events.finished.map((f) => f.id),
      ['w'],
    );
    assert.equal(engine.hasWork(), false);
    assert.equal(engine.request('p')?.phase, 'held');
  });

  it('held KV stalls what cannot fit beside it until it is released', () => {
    const engine = new Engine({ costModel: simpleCostModel(200), role: 'prefill', minEvictionTokens: 1 });
    engine.submit({ id: 'a', tokens: seq(150, 1), outputTokens: 2 }, 0);
    engine.step(0);
    engine.submit({ id: 'b', tokens: seq(100, 1000), outputTokens: 2 }, 0.15);
    assert.equal(engine.hasWork(), true);
    const stalled = engine.step(0.15);
    assert.deepEqual([stalled.duration, stalled.batchRequests], [0, 0]);
    assert.equal(engine.hasWork(), false, 'stalled: nothing can run');
    assert.equal(engine.snapshot().waiting, 1);
    engine.releaseKv('a');
    assert.equal(engine.hasWork(), true);
    const next = engine.step(0.2);
    close(next.duration, 0.1);
    // 50 free: 50 of a's (now unpinned) prompt are evicted, its head kept.
    assert.deepEqual(next.events.evictions, [{ path: seq(150, 1), keptTokens: 100 }]);
    assert.deepEqual(
      next.events.kvReady.map((k) => k.id),
      ['b'],
    );
    engine.checkInvariants();
  });

  it('refuses what a role does not run, and a release of KV that is not held', () => {
    const decode = new Engine({ costModel: simpleCostModel(1000), role: 'decode' });
    assert.throws(() => decode.submit({ id: 'a', tokens: A, outputTokens: 2 }, 0), /decode-role/);
    assert.throws(
      () => decode.submit({ id: 'a', tokens: A, outputTokens: 2 }, 0, { stopAfterPrefill: true }),
      /decode-role/,
    );
    const prefill = new Engine({ costModel: simpleCostModel(1000), role: 'prefill' });
    assert.throws(
      () => prefill.submit({ id: 'a', tokens: A, outputTokens: 2 }, 0, { stopAfterPrefill: false }),
      /prefill-role/,
    );
    assert.throws(
      () => prefill.adopt({ id: 'a', tokens: A, outputTokens: 2 }, { kvTokens: 100, generated: 1 }, 0),
      /prefill-role/,
    );
    prefill.submit({ id: 'a', tokens: A, outputTokens: 2 }, 0);
    assert.throws(() => prefill.releaseKv('a'), /holds no KV/);
    assert.equal(prefill.releaseKv('unknown'), false);
    assert.throws(
      () => new Engine({ costModel: simpleCostModel(1000), role: 'both' as never }),
      /role must be one of/,
    );
  });
});

describe('Engine roles: adopt on the decode side', () => {
  it('an adopted request reserves its KV, decodes from its second token and finishes', () => {
    const prefill = new Engine({ costModel: simpleCostModel(1000), role: 'prefill' });
    const decode = new Engine({ costModel: simpleCostModel(1000), role: 'decode' });
    const request = { id: 'a', tokens: A, outputTokens: 4 };
    prefill.submit(request, 0);
    const ready = prefill.step(0).events.kvReady[0]!;
    // The transfer would run here; then the decode side adopts and the prefill side releases.
    decode.adopt(request, ready, 0.1);
    prefill.releaseKv('a');
    assert.equal(decode.request('a')?.phase, 'adopting');
    assert.equal(decode.snapshot().adoptWaiting, 1);

    const steps: Iteration[] = [];
    let now = 0.1;
    while (decode.hasWork()) {
      const it = decode.step(now);
      steps.push(it);
      now += it.duration;
      decode.checkInvariants();
      assert.equal(it.prefillTokens, 0);
    }
    // Outputs 2, 3 and 4: three decode steps of 1 ms, seq 101, 102, 103.
    assert.deepEqual(
      steps.map((s) => [s.duration, s.decodeTokens]),
      [
        [0.001, 1],
        [0.001, 1],
        [0.001, 1],
      ],
    );
    assert.deepEqual(steps[0]!.events.started, [{ id: 'a', cachedTokens: 100 }]);
    assert.deepEqual(
      steps.flatMap((s) => s.events.firstTokens),
      [],
    );
    assert.deepEqual(steps[2]!.events.finished, [
      { id: 'a', promptTokens: 100, cachedTokens: 100, outputTokens: 4 },
    ]);
    close(now, 0.103);
    // The decode instance now caches the prompt and the output's KV (prompt + 3 tokens).
    const usage = decode.kvUsage();
    assert.deepEqual([usage.cacheTokens, usage.pinnedTokens, usage.privateTokens], [103, 0, 0]);
    const snap = decode.snapshot();
    assert.deepEqual(
      [snap.promptTokensTotal, snap.cachedPromptTokensTotal, snap.generationTokensTotal],
      [100, 100, 3],
    );
    // A second adoption of the same prompt moves no new prompt KV: it is cached here.
    decode.adopt({ id: 'b', tokens: A, outputTokens: 2 }, { kvTokens: 100, generated: 1 }, now);
    decode.step(now);
    assert.equal(decode.kvUsage().cacheTokens, 103);
  });

  it('an adopted request waits for memory in the adopt queue', () => {
    const decode = new Engine({ costModel: simpleCostModel(250), role: 'decode', minEvictionTokens: 1 });
    const a = { id: 'a', tokens: A, outputTokens: 4 };
    const c = { id: 'c', tokens: seq(150, 5000), outputTokens: 3 };
    decode.adopt(a, { kvTokens: 100, generated: 1 }, 0);
    decode.adopt(c, { kvTokens: 150, generated: 1 }, 0);
    // a takes 100 (+1 growth); c needs 150 + this iteration's growth of both (2): 152 > 150 free.
    const first = decode.step(0);
    assert.deepEqual(
      first.events.started.map((s) => s.id),
      ['a'],
    );
    assert.equal(decode.snapshot().adoptWaiting, 1);
    decode.step(0.001);
    const third = decode.step(0.002);
    assert.deepEqual(
      third.events.finished.map((f) => f.id),
      ['a'],
    );
    // a's 103 tokens are cached, unpinned: c needs 150 + 1 (its first decode step), 4 more than the
    // 147 free: a's 3 output tokens go at its admission, then 1 of a's prompt for the growth.
    const fourth = decode.step(0.003);
    assert.deepEqual(fourth.events.started, [{ id: 'c', cachedTokens: 150 }]);
    assert.deepEqual(fourth.events.evictions, [
      { path: withOutputs(A, promptHash(A), 3), keptTokens: 100 },
      { path: A, keptTokens: 99 },
    ]);
    decode.step(0.004);
    assert.equal(decode.hasWork(), false);
    decode.checkInvariants();
  });

  it('a decode engine short of memory swaps out instead of recomputing', () => {
    const decode = new Engine({ costModel: simpleCostModel(210), role: 'decode', minEvictionTokens: 1 });
    const requests = ['a', 'b'].map((id, i) => ({ id, tokens: seq(100, 1000 * (i + 1)), outputTokens: 20 }));
    for (const r of requests) decode.adopt(r, { kvTokens: 100, generated: 1 }, 0);
    const steps: Iteration[] = [];
    let now = 0;
    while (decode.hasWork()) {
      const it = decode.step(now);
      steps.push(it);
      now += it.duration;
      decode.checkInvariants();
      assert.equal(it.prefillTokens, 0, 'a decode engine never prefills');
    }
    // Both take 101 at step 0 and grow by 2 a step: step 5 would need 212 of 210, b (admitted last) goes.
    const first = steps.findIndex((s) => s.events.preempted.length > 0);
    assert.equal(first, 5);
    assert.deepEqual(steps[first]!.events.preempted, ['b']);
    const finishes = steps.flatMap((s) => s.events.finished);
    assert.deepEqual(finishes.map((f) => [f.id, f.cachedTokens, f.outputTokens]).sort(), [
      ['a', 100, 20],
      ['b', 100, 20],
    ]);
    assert.deepEqual(
      steps.flatMap((s) => s.events.started.map((x) => x.id)),
      ['a', 'b'],
      'started once each, swapped or not',
    );
    assert.equal(decode.snapshot().generationTokensTotal, 38);
    assert.ok(decode.snapshot().preemptionsTotal >= 1);
  });

  it('a mixed engine recomputes a preempted adopted request', () => {
    const engine = new Engine({ costModel: simpleCostModel(210), minEvictionTokens: 1 });
    const requests = ['a', 'b'].map((id, i) => ({ id, tokens: seq(100, 1000 * (i + 1)), outputTokens: 20 }));
    for (const r of requests) engine.adopt(r, { kvTokens: 100, generated: 1 }, 0);
    let now = 0;
    let prefilled = 0;
    const finished = new Map<string, number>();
    while (engine.hasWork()) {
      const it = engine.step(now);
      now += it.duration;
      prefilled += it.prefillTokens;
      for (const f of it.events.finished) finished.set(f.id, f.outputTokens);
      engine.checkInvariants();
    }
    assert.ok(prefilled > 0, 'b was recomputed by a prefill');
    assert.deepEqual([...finished].sort(), [
      ['a', 20],
      ['b', 20],
    ]);
  });

  it('checks what it adopts', () => {
    const decode = new Engine({ costModel: simpleCostModel(150), role: 'decode' });
    const r = { id: 'a', tokens: A, outputTokens: 4 };
    assert.throws(
      () => decode.adopt(r, { kvTokens: 101, generated: 1 }, 0),
      /expected prompt \+ generated - 1/,
    );
    assert.throws(() => decode.adopt(r, { kvTokens: 99, generated: 0 }, 0), /generated must be/);
    assert.throws(() => decode.adopt(r, { kvTokens: 103, generated: 4 }, 0), /nothing left to decode/);
    assert.throws(
      () => decode.adopt({ ...r, outputTokens: 60 }, { kvTokens: 100, generated: 1 }, 0),
      /more than the capacity/,
    );
    decode.adopt(r, { kvTokens: 101, generated: 2 }, 0);
    assert.throws(() => decode.adopt(r, { kvTokens: 101, generated: 2 }, 0), /already here/);
    // Aborted while waiting to be adopted: gone, nothing held.
    assert.equal(decode.abort('a'), true);
    assert.equal(decode.hasWork(), false);
    decode.checkInvariants();
  });

  it('kvReady events feed adopt directly', () => {
    const ready: EngineKvReady = {
      id: 'a',
      path: A,
      kvTokens: 100,
      generated: 1,
      promptTokens: 100,
      cachedTokens: 0,
    };
    const decode = new Engine({ costModel: simpleCostModel(1000), role: 'decode' });
    decode.adopt({ id: 'a', tokens: A, outputTokens: 2 }, ready, 0);
    assert.deepEqual(
      decode.step(0).events.finished.map((f) => f.id),
      ['a'],
    );
  });
  it('cachedPrefixTokens reads what a transfer need not move, touching nothing; adopt then adds only the rest', () => {
    const decode = new Engine({ costModel: simpleCostModel(1000), role: 'decode' });
    const drain = (now: number) => {
      while (decode.hasWork()) now += decode.step(now).duration;
      return now;
    };
    decode.adopt({ id: 'a', tokens: A, outputTokens: 2 }, { kvTokens: 100, generated: 1 }, 0);
    let now = drain(0);
    decode.adopt({ id: 'b', tokens: seq(100, 5000), outputTokens: 2 }, { kvTokens: 100, generated: 1 }, now);
    now = drain(now);
    // Cached and unpinned: a's path (101 tokens), then b's (101): a is the least recently used.
    const cache = (decode as unknown as { cache: PrefixCache }).cache;
    const lruBefore = cache.lruNodes();
    const usageBefore = decode.kvUsage();
    assert.deepEqual([usageBefore.cacheTokens, usageBefore.pinnedTokens], [202, 0]);

    const C = concat(seq(60, 1), seq(40, 500));
    assert.equal(decode.cachedPrefixTokens(A), 100);
    assert.equal(decode.cachedPrefixTokens(seq(30, 1)), 30);
    assert.equal(decode.cachedPrefixTokens(C), 60); // ends inside a's node: no split
    assert.equal(decode.cachedPrefixTokens(seq(10, 9000)), 0);
    assert.equal(decode.cachedPrefixTokens(new Uint32Array(0)), 0);
    // No LRU touch (a stays first), no pin, no split, no change of memory.
    assert.deepEqual(cache.lruNodes(), lruBefore);
    assert.deepEqual(decode.kvUsage(), usageBefore);
    decode.checkInvariants();

    // Adopting C: its 60 cached tokens are pinned where they are, only its 40 others are new KV.
    decode.adopt({ id: 'c', tokens: C, outputTokens: 3 }, { kvTokens: 100, generated: 1 }, now);
    const it = decode.step(now);
    assert.deepEqual(it.events.started, [{ id: 'c', cachedTokens: 100 }]);
    const usage = decode.kvUsage();
    assert.deepEqual(
      [usage.cacheTokens, usage.pinnedTokens, usage.privateTokens, usage.usedTokens],
      [202 + 40, 100, 1, 202 + 40 + 1], // + the KV of its second token, private while it decodes
    );
    decode.checkInvariants();
  });
});
