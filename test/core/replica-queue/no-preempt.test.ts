import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFcfsPolicy } from '../../../src/core/replica-queue/fcfs.ts';
import { createNoPreemptPolicy, defaultMaxOutputTokens } from '../../../src/core/replica-queue/no-preempt.ts';
import { ctx, ids, req } from './helpers.ts';

describe('no-preempt', () => {
  it('never preempts', () => {
    assert.equal(createNoPreemptPolicy().preempts, false);
  });

  it('reserves KV for the whole possible output', () => {
    const waiting = [req('a', 500, 0, 0, 600)];
    // 500 uncached + 600 output > 1000: fcfs admits it, no-preempt waits.
    assert.deepEqual(ids(createFcfsPolicy().select(waiting, ctx({ freeKvTokens: 1000 }))), ['a']);
    assert.deepEqual(ids(createNoPreemptPolicy().select(waiting, ctx({ freeKvTokens: 1000 }))), []);
    assert.deepEqual(ids(createNoPreemptPolicy().select(waiting, ctx({ freeKvTokens: 1100 }))), ['a']);
  });

  it('counts reserves of earlier admissions and blocks at the head of the line', () => {
    const waiting = [req('a', 100, 0, 0, 100), req('b', 100, 0, 0, 900), req('c', 10, 0, 0, 10)];
    assert.deepEqual(ids(createNoPreemptPolicy().select(waiting, ctx({ freeKvTokens: 1000 }))), ['a']);
  });

  it('defaults the reserve, configurably, and caps it at the context length', () => {
    assert.equal(createNoPreemptPolicy().reserveTokens(req('a', 100)), defaultMaxOutputTokens);
    assert.equal(createNoPreemptPolicy({ defaultMaxOutputTokens: 64 }).reserveTokens(req('a', 100)), 64);
    assert.equal(createNoPreemptPolicy().reserveTokens(req('a', 100, 0, 0, 7)), 7);
    const capped = createNoPreemptPolicy({ maxContextTokens: 4096 });
    assert.equal(capped.reserveTokens(req('a', 4000, 0, 0, 500)), 96);
    assert.equal(capped.reserveTokens(req('a', 5000, 0, 0, 500)), 0);
  });

  it('rejects invalid options', () => {
    assert.throws(() => createNoPreemptPolicy({ defaultMaxOutputTokens: -1 }), /defaultMaxOutputTokens/);
    assert.throws(() => createNoPreemptPolicy({ maxContextTokens: 0 }), /maxContextTokens/);
  });
});
