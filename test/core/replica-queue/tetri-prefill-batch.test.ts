import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createQueuePolicy } from '../../../src/core/replica-queue/registry.ts';
import type { QueuedRequest } from '../../../src/core/replica-queue/types.ts';
import { ctx, ids, req } from './helpers.ts';

/** a..f with prompts 400, 100, 300, 50, 200, 10 (queue order). */
const queue = (): QueuedRequest[] => [
  req('a', 400, 0, 0),
  req('b', 100, 0, 1),
  req('c', 300, 0, 2),
  req('d', 50, 0, 3),
  req('e', 200, 0, 4),
  req('f', 10, 0, 5),
];

const policy = (prefillOrder: 'fcfs' | 'sjf' | 'ljf', prefillSchedBatch: number) =>
  createQueuePolicy('tetriinfer', { prefillOrder, prefillSchedBatch });

describe('tetriinfer prefill scheduler: orders within PrefillSchedBatch', () => {
  it('sjf sorts each batch of 3 by prompt length; batches keep arrival order between them', () => {
    assert.deepEqual(ids(policy('sjf', 3).select(queue(), ctx())), ['b', 'c', 'a', 'f', 'd', 'e']);
  });

  it('ljf sorts longest first within each batch', () => {
    assert.deepEqual(ids(policy('ljf', 3).select(queue(), ctx())), ['a', 'c', 'b', 'e', 'd', 'f']);
  });

  it('fcfs keeps the queue order; a batch as large as the queue sorts it whole', () => {
    assert.deepEqual(ids(policy('fcfs', 3).select(queue(), ctx())), ['a', 'b', 'c', 'd', 'e', 'f']);
    assert.deepEqual(ids(policy('sjf', 16).select(queue(), ctx())), ['f', 'd', 'b', 'e', 'c', 'a']);
  });

  it('a scheduled batch stays ahead of later arrivals, however short (the starvation bound)', () => {
    const p = policy('sjf', 3);
    // One slot per iteration: b, then c, of the first batch {a, b, c}.
    assert.deepEqual(ids(p.select(queue(), ctx({ maxRequests: 1 }))), ['b']);
    const rest = queue().filter((r) => r.id !== 'b');
    assert.deepEqual(ids(p.select(rest, ctx({ maxRequests: 1 }))), ['c']);
    // A 1-token prompt arrives: a, the last of the first batch, still goes first.
    const later = [...rest.filter((r) => r.id !== 'c'), req('g', 1, 0, 6)];
    assert.deepEqual(ids(p.select(later, ctx({ maxRequests: 2 }))), ['a', 'f']);
  });

  it('stops at the first request whose KV does not fit (head of line), keeping its place', () => {
    const p = policy('sjf', 3);
    // b (100) fits, c (300) does not: c heads the next iteration.
    assert.deepEqual(ids(p.select(queue(), ctx({ freeKvTokens: 350 }))), ['b']);
    const rest = queue().filter((r) => r.id !== 'b');
    assert.deepEqual(ids(p.select(rest, ctx({ freeKvTokens: 350 }))), ['c']);
  });

  it('refuses bad options with one line', () => {
    assert.throws(
      () => createQueuePolicy('tetriinfer', { prefillSchedBatch: 0 }),
      /prefillSchedBatch must be/,
    );
    assert.throws(
      () => createQueuePolicy('tetriinfer', { prefillOrder: 'lifo' as 'fcfs' }),
      /prefillOrder must be fcfs, sjf or ljf/,
    );
  });
});
