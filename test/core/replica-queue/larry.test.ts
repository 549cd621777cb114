import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { createFcfsPolicy } from '../../../src/core/replica-queue/fcfs.ts';
import { createLarryPolicy, larryScore } from '../../../src/core/replica-queue/larry.ts';
import { ctx, ctxArb, ids, queueArb, req } from './helpers.ts';

const close = (actual: number, expected: number) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${actual}`);

describe('larryScore', () => {
  it('is alpha * wait - |Q| * uncached / capacity', () => {
    // Waited 6 s, 600 of 1000 KV tokens uncached, queue of 10: 6 - 10 * 0.6 = 0.
    close(larryScore(req('big', 700, 100, 4), 10, 10, 1000, 1), 0);
    close(larryScore(req('big', 700, 100, 4), 10, 10, 1000, 2), 6);
    close(larryScore(req('big', 700, 100, 4), 10, 2, 1000, 1), 4.8);
  });

  it('has no memory term when the capacity is unknown', () => {
    close(larryScore(req('a', 700, 0, 4), 10, 10, Number.POSITIVE_INFINITY, 1), 6);
  });
});

describe('larry', () => {
  const context = ctx({ now: 10, kvCapacityTokens: 1000 });
  const big = req('big', 600, 0, 4);
  const small = req('small', 10, 0, 6);

  it('runs a large prompt first while the queue is short', () => {
    // |Q| = 2: big 6 - 2 * 0.6 = 4.8; small 4 - 2 * 0.01 = 3.98.
    assert.deepEqual(ids(createLarryPolicy().select([big, small], context)), ['big', 'small']);
  });

  it('prefers small prompts under a long queue', () => {
    // |Q| = 10: big 6 - 10 * 0.6 = 0; small 4 - 0.1 = 3.9; s7..s9: 3 - 0.1 = 2.9, 2.9, ... ;
    // late ones (enqueued at 9.5, 100 tokens): 0.5 - 10 * 0.1 = -0.5.
    const waiting = [
      big,
      small,
      req('s7', 10, 0, 7),
      req('s8', 10, 0, 8),
      req('s9', 10, 0, 9),
      ...Array.from({ length: 5 }, (_, i) => req(`late${i}`, 100, 0, 9.5)),
    ];
    assert.deepEqual(ids(createLarryPolicy().select(waiting, context)), [
      'small',
      's7',
      's8',
      's9',
      'big',
      'late0',
      'late1',
      'late2',
      'late3',
      'late4',
    ]);
  });

  it('counts only the uncached prompt as memory', () => {
    const cachedBig = req('cached-big', 600, 590, 4);
    // cached-big: 6 - 2 * 0.01 = 5.98 > small's 3.98 even though its prompt is larger.
    assert.deepEqual(ids(createLarryPolicy().select([small, cachedBig], context)), ['cached-big', 'small']);
  });

  it('stops at the first request in score order that does not fit', () => {
    const waiting = [req('old-big', 900, 0, 0), req('small', 10, 0, 9)];
    // |Q| = 2: old-big 10 - 1.8 = 8.2 first, and it does not fit in 500 free tokens.
    assert.deepEqual(ids(createLarryPolicy().select(waiting, { ...context, freeKvTokens: 500 })), []);
  });

  it('with a huge alpha admits exactly what fcfs admits', () => {
    const larry = createLarryPolicy({ alpha: 1e9 });
    const fcfs = createFcfsPolicy();
    fc.assert(
      fc.property(queueArb(), ctxArb, (waiting, context) => {
        assert.deepEqual(ids(larry.select(waiting, context)), ids(fcfs.select(waiting, context)));
      }),
    );
  });

  it('with alpha 0 is shortest uncached prompt first', () => {
    const waiting = [req('a', 300), req('b', 100), req('c', 200, 150)];
    assert.deepEqual(ids(createLarryPolicy({ alpha: 0 }).select(waiting, context)), ['c', 'b', 'a']);
  });

  it('rejects a negative or infinite alpha', () => {
    assert.throws(() => createLarryPolicy({ alpha: -1 }), /alpha/);
    assert.throws(() => createLarryPolicy({ alpha: Number.POSITIVE_INFINITY }), /alpha/);
  });
});
