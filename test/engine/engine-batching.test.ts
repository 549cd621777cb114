import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Engine } from '../../src/engine/engine.ts';
import { promptHash, withOutputs } from '../../src/engine/output-tokens.ts';
import { concat, drive, EASY, linearCost, seq, timeOf } from './helpers.ts';

const K = { a: 0.01, b: 0.001, c: 0.0001, d: 0.000001 };

describe('Engine: one request alone', () => {
  it('prefills in ceil(prompt / budget) chunks, then decodes outputTokens - 1 times', () => {
    const cost = linearCost(K);
    const engine = new Engine({ costModel: cost, chunkedPrefillTokens: 512 });
    const log = drive(engine, [{ id: 'a', tokens: seq(1200, 1), outputTokens: 4, arrival: 0 }]);

    // new_r = tokens computed this iteration, seq_r = sequence length after it.
    assert.deepEqual(cost.shapes, [
      { requests: 1, newTokens: 512, seqTokens: 512, newTimesSeq: 512 * 512 },
      { requests: 1, newTokens: 512, seqTokens: 1024, newTimesSeq: 512 * 1024 },
      { requests: 1, newTokens: 176, seqTokens: 1200, newTimesSeq: 176 * 1200 },
      { requests: 1, newTokens: 1, seqTokens: 1201, newTimesSeq: 1201 },
      { requests: 1, newTokens: 1, seqTokens: 1202, newTimesSeq: 1202 },
      { requests: 1, newTokens: 1, seqTokens: 1203, newTimesSeq: 1203 },
    ]);
    const durations = log.steps.map((s) => s.iteration.duration);
    // By hand: 0.01 + 0.512 + 0.0512 + 0.262144.
    assert.ok(Math.abs(durations[0]! - 0.835344) < 1e-12);
    assert.deepEqual(
      durations,
      cost.shapes.map((shape) => timeOf(K, shape)),
    );

    const ends = durations.map((_, i) => durations.slice(0, i + 1).reduce((x, y) => x + y, 0));
    assert.equal(log.firstToken.get('a'), ends[2]);
    assert.equal(log.finish.get('a'), ends[5]);
    assert.deepEqual(log.steps[0]!.iteration.events.started, [{ id: 'a', cachedTokens: 0 }]);
    assert.deepEqual(log.steps[5]!.iteration.events.finished, [
      { id: 'a', promptTokens: 1200, cachedTokens: 0, outputTokens: 4 },
    ]);
    assert.deepEqual(
      log.steps.map((s) => [s.iteration.batchRequests, s.iteration.prefillTokens, s.iteration.decodeTokens]),
      [
        [1, 512, 0],
        [1, 512, 0],
        [1, 176, 0],
        [1, 0, 1],
        [1, 0, 1],
        [1, 0, 1],
      ],
    );
    assert.equal(engine.hasWork(), false);
  });

  it('a one-token request finishes with its prefill', () => {
    const engine = new Engine({ costModel: linearCost(EASY) });
    const log = drive(engine, [{ id: 'a', tokens: seq(100, 1), outputTokens: 1, arrival: 0 }]);
    assert.equal(log.steps.length, 1);
    assert.deepEqual(log.steps[0]!.iteration.events.firstTokens, ['a']);
    assert.equal(log.steps[0]!.iteration.events.finished.length, 1);
  });

  it('without chunking, a long prompt prefills in one iteration', () => {
    const cost = linearCost(EASY);
    const engine = new Engine({ costModel: cost, chunkedPrefillTokens: 512, enableChunking: false });
    drive(engine, [{ id: 'a', tokens: seq(1200, 1), outputTokens: 2, arrival: 0 }]);
    assert.deepEqual(
      cost.shapes.map((s) => s.newTokens),
      [1200, 1],
    );
  });

  it('idle: step without work costs nothing', () => {
    const engine = new Engine({ costModel: linearCost(EASY) });
    const it = engine.step(0);
    assert.equal(it.duration, 0);
    assert.equal(it.batchRequests, 0);
  });
});

describe('Engine: prefix sharing', () => {
  const shared = seq(600, 1);
  const a = concat(shared, seq(100, 10_000));
  const b = concat(shared, seq(50, 20_000));

  it('a later request finds the shared prefix cached and prefills only the rest', () => {
    const cost = linearCost(EASY);
    const engine = new Engine({ costModel: cost });
    const log = drive(engine, [
      { id: 'a', tokens: a, outputTokens: 2, arrival: 0 },
      { id: 'b', tokens: b, outputTokens: 1, arrival: 100 },
    ]);
    const startB = log.steps.find((s) => s.iteration.events.started.some((x) => x.id === 'b'))!;
    assert.deepEqual(startB.iteration.events.started, [{ id: 'b', cachedTokens: 600 }]);
    assert.deepEqual(startB.batch, [
      {
        id: 'b',
        phase: 'prefill',
        newTokens: 50,
        seqTokens: 650,
        joined: true,
        cachedTokens: 600,
        targetTokens: 650,
      },
    ]);
    assert.deepEqual(startB.iteration.events.finished, [
      { id: 'b', promptTokens: 650, cachedTokens: 600, outputTokens: 1 },
    ]);
  });

  it('chunked prefill shares each chunk as soon as it is computed', () => {
    const cost = linearCost(EASY);
    const engine = new Engine({ costModel: cost, chunkedPrefillTokens: 512 });
    // b arrives during a's first chunk (which ends at 1.512 s) and joins the second iteration.
    const log = drive(engine, [
      { id: 'a', tokens: a, outputTokens: 2, arrival: 0 },
      { id: 'b', tokens: b, outputTokens: 1, arrival: 1.5 },
    ]);
    const second = log.steps[1]!;
    assert.deepEqual(second.iteration.events.started, [{ id: 'b', cachedTokens: 512 }]);
    // a's 188 remaining tokens first, then b's 138 uncached ones with the budget left.
    assert.deepEqual(cost.shapes[1], {
      requests: 2,
      newTokens: 188 + 138,
      seqTokens: 700 + 650,
      newTimesSeq: 188 * 700 + 138 * 650,
    });
  });

  it('finished requests leave prompt and output (all but the last token) in the cache', () => {
    const engine = new Engine({ costModel: linearCost(EASY) });
    const prompt = seq(100, 1);
    drive(engine, [{ id: 'a', tokens: prompt, outputTokens: 5, arrival: 0 }]);
    assert.equal(engine.kvUsage().cacheTokens, 104);
    assert.equal(engine.kvUsage().evictableTokens, 104);
    // A follow-up whose prompt is a's prompt and answer (as a chat turn would be) hits all of it.
    const followUp = concat(withOutputs(prompt, promptHash(prompt), 4), seq(20, 50_000));
    const log = drive(engine, [{ id: 'b', tokens: followUp, outputTokens: 1, arrival: 0 }]);
    assert.deepEqual(log.steps[0]!.iteration.events.started, [{ id: 'b', cachedTokens: 104 }]);
  });

  it('a fully cached prompt recomputes only its last token', () => {
    const cost = linearCost(EASY);
    const engine = new Engine({ costModel: cost });
    const prompt = seq(100, 1);
    drive(engine, [
      { id: 'a', tokens: prompt, outputTokens: 1, arrival: 0 },
      { id: 'b', tokens: prompt, outputTokens: 3, arrival: 10 },
    ]);
    assert.deepEqual(
      cost.shapes.slice(1).map((s) => [s.newTokens, s.seqTokens]),
      [
        [1, 100],
        [1, 101],
        [1, 102],
      ],
    );
  });
});

describe('Engine: continuous batching', () => {
  it('decodes every running request in one iteration and charges the batch sums', () => {
    const cost = linearCost(K);
    const engine = new Engine({ costModel: cost });
    const log = drive(engine, [
      { id: 'a', tokens: seq(100, 1), outputTokens: 5, arrival: 0 },
      { id: 'b', tokens: seq(200, 1000), outputTokens: 3, arrival: 0 },
    ]);
    assert.deepEqual(cost.shapes, [
      { requests: 2, newTokens: 300, seqTokens: 300, newTimesSeq: 100 * 100 + 200 * 200 },
      { requests: 2, newTokens: 2, seqTokens: 101 + 201, newTimesSeq: 101 + 201 },
      { requests: 2, newTokens: 2, seqTokens: 102 + 202, newTimesSeq: 102 + 202 },
      { requests: 1, newTokens: 1, seqTokens: 103, newTimesSeq: 103 },
      { requests: 1, newTokens: 1, seqTokens: 104, newTimesSeq: 104 },
    ]);
    assert.deepEqual(
      log.steps.map((s) => s.iteration.duration),
      cost.shapes.map((shape) => timeOf(K, shape)),
    );
    assert.deepEqual(log.steps[0]!.iteration.events.firstTokens, ['a', 'b']);
    assert.deepEqual(
      log.steps[2]!.iteration.events.finished.map((f) => f.id),
      ['b'],
    );
    assert.deepEqual(
      log.steps[4]!.iteration.events.finished.map((f) => f.id),
      ['a'],
    );
  });

  it('a new request joins running decodes (mixed batch)', () => {
    const cost = linearCost(EASY);
    const engine = new Engine({ costModel: cost });
    drive(engine, [
      { id: 'a', tokens: seq(100, 1), outputTokens: 10, arrival: 0 },
      { id: 'b', tokens: seq(50, 1000), outputTokens: 1, arrival: 1.05 },
    ]);
    // a's prefill ends at 1.1 s; b joins the first decode iteration.
    assert.deepEqual(cost.shapes[1], {
      requests: 2,
      newTokens: 51,
      seqTokens: 101 + 50,
      newTimesSeq: 101 + 2500,
    });
  });

  it('maxRunning bounds the batch', () => {
    const cost = linearCost(EASY);
    const engine = new Engine({ costModel: cost, maxRunning: 2 });
    const requests = [0, 1, 2].map((i) => ({
      id: `r${i}`,
      tokens: seq(10, 100 * i),
      outputTokens: 3,
      arrival: 0,
    }));
    const log = drive(engine, requests);
    assert.ok(cost.shapes.every((s) => s.requests <= 2));
    assert.equal(log.finish.size, 3);
    assert.deepEqual(
      log.steps.map((s) => s.iteration.events.started.map((x) => x.id)),
      [['r0', 'r1'], [], [], ['r2'], [], []],
    );
  });
});

describe('Engine: submit, abort, snapshot', () => {
  it('rejects duplicates, empty prompts, bad counts and requests that can never fit', () => {
    const engine = new Engine({ costModel: linearCost(EASY, 100) });
    engine.submit({ id: 'a', tokens: seq(10, 1), outputTokens: 1 }, 0);
    assert.throws(() => engine.submit({ id: 'a', tokens: seq(10, 1), outputTokens: 1 }, 0), /already/);
    assert.throws(() => engine.submit({ id: 'e', tokens: new Uint32Array(0), outputTokens: 1 }, 0), /empty/);
    assert.throws(() => engine.submit({ id: 'n', tokens: seq(10, 1), outputTokens: -1 }, 0), /outputTokens/);
    assert.throws(() => engine.submit({ id: 'big', tokens: seq(90, 1), outputTokens: 12 }, 0), /capacity/);
    engine.submit({ id: 'fits', tokens: seq(90, 1), outputTokens: 11 }, 0);
    const noPreempt = new Engine({ costModel: linearCost(EASY, 100), queuePolicy: 'no-preempt' });
    // The no-preempt reserve is the whole output: 90 + 11 > 100.
    assert.throws(() => noPreempt.submit({ id: 'x', tokens: seq(90, 1), outputTokens: 11 }, 0), /capacity/);
  });

  it('serves an output count of 0 as 1', () => {
    const engine = new Engine({ costModel: linearCost(EASY) });
    const log = drive(engine, [{ id: 'a', tokens: seq(10, 1), outputTokens: 0, arrival: 0 }]);
    assert.equal(log.steps[0]!.iteration.events.finished[0]!.outputTokens, 1);
  });

  it('abort drops a waiting or running request and frees its memory', () => {
    const engine = new Engine({ costModel: linearCost(EASY), maxRunning: 1 });
    engine.submit({ id: 'a', tokens: seq(100, 1), outputTokens: 50 }, 0);
    engine.submit({ id: 'b', tokens: seq(100, 500), outputTokens: 50 }, 0);
    engine.step(0);
    engine.step(1);
    assert.equal(engine.request('a')!.phase, 'decode');
    assert.equal(engine.request('b')!.phase, 'waiting');
    assert.equal(engine.abort('b'), true);
    assert.equal(engine.abort('a'), true);
    assert.equal(engine.abort('a'), false);
    assert.equal(engine.hasWork(), false);
    engine.checkInvariants();
    const usage = engine.kvUsage();
    assert.equal(usage.privateTokens, 0);
    assert.equal(usage.pinnedTokens, 0);
    assert.equal(usage.cacheTokens, 100); // a's prompt stays cached
  });

  it('snapshot reports queue, memory and counters', () => {
    const engine = new Engine({
      costModel: linearCost(EASY, 10_000),
      chunkedPrefillTokens: 64,
      maxRunning: 1,
    });
    engine.submit({ id: 'a', tokens: seq(100, 1), outputTokens: 2 }, 0);
    engine.submit({ id: 'b', tokens: concat(seq(50, 1), seq(30, 900)), outputTokens: 1 }, 0);
    let s = engine.snapshot();
    assert.equal(s.waiting, 2);
    assert.equal(s.queuedPrefillTokens, 180);
    engine.step(0); // a: 64 of 100 computed, shared at once: b now finds 50 cached
    s = engine.snapshot();
    assert.deepEqual(
      [s.running, s.waiting, s.queuedPrefillTokens, s.usedKvTokens, s.freeKvTokens],
      [1, 1, 36 + 30, 100, 9900],
    );
    while (engine.hasWork()) engine.step(10);
    s = engine.snapshot();
    assert.equal(s.promptTokensTotal, 180);
    assert.equal(s.cachedPromptTokensTotal, 50);
    assert.equal(s.generationTokensTotal, 3);
    assert.equal(s.usedKvTokens, 0);
    assert.equal(s.kvCapacityTokens, 10_000);
  });
});
