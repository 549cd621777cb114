import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Engine } from '../../src/engine/engine.ts';
import type { Iteration } from '../../src/engine/types.ts';
import { linearCost, seq } from './helpers.ts';

// 1 s per iteration; KV 1 byte per token over 100 bytes/s: swapping 50 tokens adds 0.5 s.
const cost = (capacity: number) => linearCost({ a: 1, b: 0, c: 0, d: 0 }, capacity);

function run(engine: Engine, until: (it: Iteration, now: number) => boolean, limit = 500): number {
  let now = 0;
  for (let i = 0; i < limit && engine.hasWork(); i++) {
    const it = engine.step(now);
    now += it.duration;
    engine.checkInvariants();
    if (until(it, now)) return now;
  }
  throw new Error('condition never met');
}

describe('engine host KV pool', () => {
  it('swaps a preempted decode out to the host and back in, charging each copy to its iteration', () => {
    const engine = new Engine({
      costModel: cost(100),
      hostKvTokens: 1000,
      swapBandwidth: 100,
      minEvictionTokens: 1,
    });
    engine.submit({ id: 'a', tokens: seq(40, 1), outputTokens: 30 }, 0);
    engine.submit({ id: 'b', tokens: seq(40, 1000), outputTokens: 30 }, 0);
    let swappedOut: Iteration | undefined;
    let hostTokens = 0;
    run(engine, (it) => {
      if (it.events.preempted.length === 0) return false;
      swappedOut = it;
      hostTokens = engine.kvUsage().hostTokens;
      return true;
    });
    assert.deepEqual(swappedOut!.events.preempted, ['b']);
    const b = engine.request('b')!;
    assert.equal(b.phase, 'adopting');
    // Its whole KV (prompt + output so far but the last token) is on the host, none of it private on the GPU.
    assert.equal(hostTokens, 40 + b.generated - 1);
    assert.equal(b.privateTokens, 0);
    assert.equal(swappedOut!.duration, 1 + hostTokens / 100);
    assert.deepEqual(engine.swapStats(), { swapOuts: 1, swapIns: 0 });

    // Back in once a finishes: only what the GPU cache lacks (its generated tokens) is copied back.
    let swappedIn: Iteration | undefined;
    run(engine, (it) => {
      if (engine.swapStats().swapIns === 0) return false;
      swappedIn = it;
      return true;
    });
    assert.equal(engine.kvUsage().hostTokens, 0);
    // b's prompt may have been evicted in part meanwhile (unpinned): at least its output comes back.
    assert.ok(
      swappedIn!.duration >= 1 + (hostTokens - 40) / 100 && swappedIn!.duration <= 1 + hostTokens / 100,
    );
    const finished = new Map<string, number>();
    run(engine, (it) => {
      for (const f of it.events.finished) finished.set(f.id, f.outputTokens);
      return !engine.hasWork();
    });
    assert.equal(finished.get('b'), 30);
    // Never recomputed: b was prefilled once.
    assert.equal(engine.snapshot().promptTokensTotal, 80);
  });

  it('recomputes when the host pool has no room', () => {
    const engine = new Engine({ costModel: cost(100), hostKvTokens: 10, swapBandwidth: 100 });
    engine.submit({ id: 'a', tokens: seq(40, 1), outputTokens: 30 }, 0);
    engine.submit({ id: 'b', tokens: seq(40, 1000), outputTokens: 30 }, 0);
    run(engine, (it) => it.events.preempted.length > 0);
    assert.equal(engine.request('b')!.phase, 'waiting');
    assert.deepEqual(engine.swapStats(), { swapOuts: 0, swapIns: 0 });
  });

  it('fastserve preempts a demoted decode for a new short request, swapping it to the host', () => {
    const engine = new Engine({
      costModel: cost(150),
      queuePolicy: 'fastserve',
      queuePolicyOptions: { quantumTokens: 2, levels: 4, prefillTokensPerStep: 100 },
      hostKvTokens: 1000,
      swapBandwidth: 100,
      minEvictionTokens: 1,
    });
    engine.submit({ id: 'long', tokens: seq(60, 1), outputTokens: 80 }, 0);
    // Let it decode past its quanta (2 + 4 + 8 tokens: level 3) and grow to 120 tokens of KV.
    const now = run(engine, () => (engine.request('long')?.kvTokens ?? 0) >= 120);
    engine.submit({ id: 'short', tokens: seq(50, 5000), outputTokens: 5 }, now);
    const it = engine.step(now);
    engine.checkInvariants();
    assert.deepEqual(it.events.preempted, ['long']);
    assert.deepEqual(
      it.events.started.map((s) => s.id),
      ['short'],
    );
    assert.equal(engine.request('long')!.phase, 'adopting');
    assert.ok(engine.kvUsage().hostTokens >= 119);
    // It resumes once short finishes (nothing better waits) and finishes with all its tokens.
    const done = new Map<string, number>();
    run(engine, (step) => {
      for (const f of step.events.finished) done.set(f.id, f.outputTokens);
      return !engine.hasWork();
    });
    assert.deepEqual([done.get('short'), done.get('long')], [5, 80]);
    assert.equal(engine.swapStats().swapIns, 1);
  });

  it('refuses a bad host pool or bandwidth', () => {
    assert.throws(() => new Engine({ costModel: cost(100), hostKvTokens: -1 }), /hostKvTokens/);
    assert.throws(() => new Engine({ costModel: cost(100), swapBandwidth: 0 }), /swapBandwidth/);
  });
});
