import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createFcfsPolicy } from '../../../src/core/replica-queue/fcfs.ts';
import { ctx, ids, req } from './helpers.ts';

describe('fcfs', () => {
  const fcfs = createFcfsPolicy();

  it('admits in queue order', () => {
    const waiting = [req('a', 30, 0, 3), req('b', 10, 10, 1), req('c', 20, 0, 2)];
    assert.deepEqual(ids(fcfs.select(waiting, ctx())), ['a', 'b', 'c']);
  });

  it('blocks at the head of the line: stops at the first request that does not fit', () => {
    const waiting = [req('small', 100), req('big', 900), req('tiny', 10)];
    // 'tiny' would fit in the 50 tokens left after 'small', but FCFS does not skip 'big'.
    assert.deepEqual(ids(fcfs.select(waiting, ctx({ freeKvTokens: 150 }))), ['small']);
  });

  it('preempts and reserves nothing', () => {
    assert.equal(fcfs.preempts, true);
    assert.equal(fcfs.reserveTokens(req('a', 10, 0, 0, 500)), 0);
  });
});
