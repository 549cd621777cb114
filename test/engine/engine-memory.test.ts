import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFcfsPolicy } from '../../src/core/replica-queue/fcfs.ts';
import { createNoPreemptPolicy } from '../../src/core/replica-queue/no-preempt.ts';
import { Engine } from '../../src/engine/engine.ts';
import { promptHash, withOutputs } from '../../src/engine/output-tokens.ts';
import type { EngineEviction } from '../../src/engine/types.ts';
import { concat, drive, EASY, linearCost, type RunLog, seq } from './helpers.ts';

function evictions(log: RunLog): EngineEviction[] {
  return log.steps.flatMap((s) => [...s.iteration.events.evictions]);
}

function startedOf(log: RunLog, id: string) {
  for (const s of log.steps) {
    const found = s.iteration.events.started.find((x) => x.id === id);
    if (found !== undefined) return found;
  }
  return undefined;
}

describe('Engine: LRU eviction', () => {
  const X = seq(300, 1);
  const Y = seq(300, 1000);
  const Z = seq(500, 5000);

  it('evicts the least recently used prefix first, in part, keeping its head', () => {
    const engine = new Engine({ costModel: linearCost(EASY, 1000), minEvictionTokens: 1 });
    const log = drive(
      engine,
      [
        { id: 'a', tokens: X, outputTokens: 1, arrival: 0 },
        { id: 'b', tokens: Y, outputTokens: 1, arrival: 10 },
        // Needs 500, 400 free: the last 100 tokens of X (least recently used) go.
        { id: 'c', tokens: Z, outputTokens: 1, arrival: 20 },
        // X's head is still cached; pinned first, so the 100 tokens it needs come from Y, not from it.
        { id: 'd', tokens: X, outputTokens: 1, arrival: 30 },
      ],
      (_, e) => e.checkInvariants(),
    );
    assert.deepEqual(evictions(log), [
      { path: X, keptTokens: 200 },
      { path: Y, keptTokens: 200 },
    ]);
    assert.deepEqual(startedOf(log, 'd'), { id: 'd', cachedTokens: 200 });
    assert.equal(engine.kvUsage().cacheTokens, 1000);
  });

  it('using a prefix again makes it the most recently used', () => {
    const engine = new Engine({ costModel: linearCost(EASY, 1000), minEvictionTokens: 1 });
    const log = drive(engine, [
      { id: 'a', tokens: X, outputTokens: 1, arrival: 0 },
      { id: 'b', tokens: Y, outputTokens: 1, arrival: 10 },
      { id: 'a2', tokens: X, outputTokens: 1, arrival: 20 },
      { id: 'c', tokens: Z, outputTokens: 1, arrival: 30 },
    ]);
    assert.deepEqual(startedOf(log, 'a2'), { id: 'a2', cachedTokens: 300 });
    assert.deepEqual(evictions(log), [{ path: Y, keptTokens: 200 }]);
  });

  it('a victim and its parent evicted together make one event', () => {
    const engine = new Engine({ costModel: linearCost(EASY, 1000), minEvictionTokens: 1 });
    // a leaves X and its first 100 generated tokens (a child node of X) in the cache.
    const log = drive(engine, [
      { id: 'a', tokens: X, outputTokens: 101, arrival: 0 },
      { id: 'c', tokens: seq(1000, 5000), outputTokens: 1, arrival: 1000 },
    ]);
    assert.deepEqual(evictions(log), [{ path: withOutputs(X, promptHash(X), 100), keptTokens: 0 }]);
  });

  it('never evicts what running requests use: admission waits instead', () => {
    const engine = new Engine({ costModel: linearCost(EASY, 1000), minEvictionTokens: 1 });
    const log = drive(
      engine,
      [
        { id: 'a', tokens: X, outputTokens: 200, arrival: 0 },
        { id: 'c', tokens: seq(800, 5000), outputTokens: 1, arrival: 1 },
      ],
      (_, e) => e.checkInvariants(),
    );
    // c needs 800 while a holds 300 + its growing output: c waits until a finishes.
    const aFinish = log.finish.get('a')!;
    const cStart = log.steps.find((s) => s.iteration.events.started.some((x) => x.id === 'c'))!.start;
    assert.ok(cStart >= aFinish);
    // Then 299 must go: a's output (199, a leaf) and the last 100 of X, in one event.
    assert.deepEqual(evictions(log), [{ path: withOutputs(X, promptHash(X), 199), keptTokens: 200 }]);
  });
});

describe('Engine: preemption', () => {
  const stream = [0, 1, 2, 3].map((i) => ({
    id: `r${i}`,
    tokens: seq(100, 1000 * (i + 1)),
    outputTokens: 150,
    maxTokens: 150,
    arrival: 0,
  }));

  it('fcfs preempts the most recently admitted under decode pressure and recomputes it', () => {
    const engine = new Engine({ costModel: linearCost(EASY, 600), queuePolicy: 'fcfs' });
    const log = drive(engine, stream, (_, e) => e.checkInvariants());
    const preempted = log.steps.flatMap((s) => [...s.iteration.events.preempted]);
    assert.ok(preempted.length > 0);
    // 400 prompt tokens leave room for 50 decode steps of 4 requests; the 51st preempts r3.
    const first = log.steps.findIndex((s) => s.iteration.events.preempted.length > 0);
    assert.equal(first, 51);
    assert.deepEqual(log.steps[first]!.iteration.events.preempted, ['r3']);
    // Readmitted later with its prompt and 51 generated tokens to recompute (its prompt may have been
    // evicted meanwhile; the generated tokens were private, so they were not cached).
    const readmission = log.steps
      .slice(first + 1)
      .find((s) => s.batch.some((b) => b.id === 'r3' && b.joined))!;
    const item = readmission.batch.find((b) => b.id === 'r3')!;
    assert.equal(item.targetTokens, 151);
    assert.ok(item.cachedTokens <= 100);
    assert.equal(engine.snapshot().preemptionsTotal, preempted.length);
    // Everyone finishes once, with one start and one first token each.
    assert.deepEqual([...log.finish.keys()].sort(), ['r0', 'r1', 'r2', 'r3']);
    for (const id of ['r0', 'r1', 'r2', 'r3']) {
      const starts = log.steps.flatMap((s) => s.iteration.events.started.filter((x) => x.id === id));
      const firsts = log.steps.flatMap((s) => s.iteration.events.firstTokens.filter((x) => x === id));
      assert.equal(starts.length, 1);
      assert.equal(firsts.length, 1);
    }
    assert.equal(engine.snapshot().generationTokensTotal, 600);
  });

  it('a preempted request finds what is still cached when readmitted', () => {
    const shared = seq(80, 1);
    const engine = new Engine({ costModel: linearCost(EASY, 600) });
    const log = drive(
      engine,
      [
        { id: 'r0', tokens: concat(shared, seq(20, 1000)), outputTokens: 300, arrival: 0 },
        { id: 'r1', tokens: concat(shared, seq(20, 2000)), outputTokens: 300, arrival: 0 },
      ],
      (_, e) => e.checkInvariants(),
    );
    // 120 cached prompt tokens (the shared 80 once) + 2 x 240 generated fill 600: step 241 preempts r1.
    const first = log.steps.findIndex((s) => s.iteration.events.preempted.length > 0);
    assert.equal(first, 241);
    assert.deepEqual(log.steps[first]!.iteration.events.preempted, ['r1']);
    // It cannot come back before r0 finishes (it needs 241 more tokens); then its whole prompt is
    // still cached and it recomputes its 241 generated tokens.
    const back = log.steps.find((s) => s.start > 0 && s.batch.some((b) => b.id === 'r1' && b.joined))!;
    assert.ok(back.start >= log.finish.get('r0')!);
    const item = back.batch.find((b) => b.id === 'r1')!;
    assert.deepEqual([item.targetTokens, item.cachedTokens, item.newTokens], [341, 100, 241]);
    assert.ok(log.finish.has('r1'));
  });

  it("no-preempt reserves each request's max_tokens and never preempts", () => {
    const engine = new Engine({ costModel: linearCost(EASY, 600), queuePolicy: 'no-preempt' });
    const log = drive(engine, stream, (record, e) => {
      e.checkInvariants();
      assert.equal(record.iteration.events.preempted.length, 0);
      assert.ok(record.batch.length <= 2); // 100 + 150 reserved each: two fit in 600
    });
    assert.equal(log.finish.size, 4);
    assert.equal(engine.snapshot().preemptionsTotal, 0);
  });

  it('no-preempt reserves max_tokens, not the true output length (review 4.3)', () => {
    // Each generates 10 tokens but allows 300: 100 + 300 reserved each, so only one fits in 600.
    // Reserving the true length (an oracle) would run all four together (4 x 110 <= 600).
    const short = stream.map((r) => ({ ...r, outputTokens: 10, maxTokens: 300 }));
    const engine = new Engine({ costModel: linearCost(EASY, 600), queuePolicy: 'no-preempt' });
    let most = 0;
    const log = drive(engine, short, (record, e) => {
      e.checkInvariants();
      most = Math.max(most, record.batch.length);
    });
    assert.equal(most, 1);
    assert.equal(log.finish.size, 4);
  });

  it('without max_tokens no-preempt reserves its default, and generation stops there', () => {
    const policy = createNoPreemptPolicy({ defaultMaxOutputTokens: 200 });
    const engine = new Engine({ costModel: linearCost(EASY, 10_000), queuePolicy: policy });
    const finishes: number[] = [];
    drive(engine, [{ id: 'long', tokens: seq(100, 1), outputTokens: 500, arrival: 0 }], (record) => {
      for (const f of record.iteration.events.finished) finishes.push(f.outputTokens);
    });
    assert.deepEqual(finishes, [200]);
    const fcfs = new Engine({ costModel: linearCost(EASY, 10_000), queuePolicy: 'fcfs' });
    const all: number[] = [];
    drive(fcfs, [{ id: 'long', tokens: seq(100, 1), outputTokens: 500, arrival: 0 }], (record) => {
      for (const f of record.iteration.events.finished) all.push(f.outputTokens);
    });
    assert.deepEqual(all, [500], 'a preempting policy reserves nothing and generates the whole output');
  });

  it('generation stops at max_tokens', () => {
    const engine = new Engine({ costModel: linearCost(EASY, 10_000), queuePolicy: 'lpm' });
    const finishes: number[] = [];
    drive(
      engine,
      [{ id: 'a', tokens: seq(100, 1), outputTokens: 500, maxTokens: 64, arrival: 0 }],
      (record) => {
        for (const f of record.iteration.events.finished) finishes.push(f.outputTokens);
      },
    );
    assert.deepEqual(finishes, [64]);
  });

  it('a non-preempting policy whose reserve is too small is an error, not silent overflow', () => {
    const policy = { ...createFcfsPolicy(), preempts: false };
    const engine = new Engine({ costModel: linearCost(EASY, 600), queuePolicy: policy });
    assert.throws(() => drive(engine, stream), /non-preempting/);
  });
});

describe('Engine: eviction granularity', () => {
  it('evicts at least minEvictionTokens at a time, so decode growth reports fewer evictions', () => {
    const run = (minEvictionTokens: number) => {
      const engine = new Engine({ costModel: linearCost(EASY, 1000), minEvictionTokens });
      const log = drive(engine, [
        { id: 'a', tokens: seq(600, 1), outputTokens: 1, arrival: 0 },
        { id: 'b', tokens: seq(300, 5000), outputTokens: 300, arrival: 10 },
      ]);
      return evictions(log);
    };
    // b's output grows past the 100 free tokens: one token short per step, or 64 at a time.
    const exact = run(1);
    const coarse = run(64);
    assert.equal(exact.length, 199);
    assert.equal(coarse.length, Math.ceil(199 / 64));
    assert.deepEqual(exact[0], { path: seq(600, 1), keptTokens: 599 });
    assert.deepEqual(coarse[0], { path: seq(600, 1), keptTokens: 536 });
    // Successive evictions up one chain share the path's buffer.
    assert.equal(exact[1]!.path.buffer, exact[0]!.path.buffer);
  });
});
