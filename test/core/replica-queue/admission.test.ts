import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  admitInOrder,
  cachedPromptTokens,
  noReserve,
  prefillTokens,
  queueOrder,
  uncachedTokens,
} from '../../../src/core/replica-queue/admission.ts';
import { ctx, ids, req } from './helpers.ts';

const admitFcfs = (waiting: ReturnType<typeof req>[], context = ctx()) =>
  ids(admitInOrder(waiting, context, queueOrder(waiting.length), noReserve));

describe('token accounting', () => {
  it('needs KV only for the uncached part of the prompt', () => {
    assert.equal(uncachedTokens(req('a', 100, 63)), 37);
    assert.equal(cachedPromptTokens(req('a', 100, 63)), 63);
  });

  it('clamps cached tokens to [0, prompt]', () => {
    assert.equal(uncachedTokens(req('a', 100, 150)), 0);
    assert.equal(cachedPromptTokens(req('a', 100, 150)), 100);
    assert.equal(uncachedTokens(req('a', 100, -5)), 100);
  });

  it('charges a fully cached prompt one budget token (its last token is recomputed)', () => {
    assert.equal(prefillTokens(req('a', 100, 100)), 1);
    assert.equal(prefillTokens(req('a', 0, 0)), 1);
    assert.equal(prefillTokens(req('a', 100, 40)), 60);
  });
});

describe('admitInOrder', () => {
  it('admits fully cached requests with no free KV, one budget token each', () => {
    const waiting = [req('a', 50, 50), req('b', 80, 80), req('c', 10, 10)];
    assert.deepEqual(admitFcfs(waiting, ctx({ freeKvTokens: 0, tokenBudget: 2 })), ['a', 'b']);
  });

  it('admits nothing without budget, slots or queue', () => {
    const waiting = [req('a', 10, 10)];
    assert.deepEqual(admitFcfs(waiting, ctx({ tokenBudget: 0 })), []);
    assert.deepEqual(admitFcfs(waiting, ctx({ maxRequests: 0 })), []);
    assert.deepEqual(admitFcfs([], ctx()), []);
  });

  it('admits a request larger than the remaining budget as the last one (chunked)', () => {
    const waiting = [req('a', 100), req('b', 300), req('c', 1)];
    assert.deepEqual(admitFcfs(waiting, ctx({ tokenBudget: 150 })), ['a', 'b']);
  });

  it('stops once the budget is exactly spent', () => {
    const waiting = [req('a', 100), req('b', 50), req('c', 1, 1)];
    assert.deepEqual(admitFcfs(waiting, ctx({ tokenBudget: 150 })), ['a', 'b']);
  });

  it('requires the whole uncached prompt in KV even when chunked', () => {
    const waiting = [req('a', 100), req('b', 300)];
    assert.deepEqual(admitFcfs(waiting, ctx({ tokenBudget: 150, freeKvTokens: 399 })), ['a']);
  });

  it('counts the reserve against free KV', () => {
    const waiting = [req('a', 100), req('b', 100)];
    const admitted = admitInOrder(waiting, ctx({ freeKvTokens: 250 }), queueOrder(2), () => 50);
    assert.deepEqual(ids(admitted), ['a']);
  });

  it('respects the slot limit', () => {
    const waiting = [req('a', 1), req('b', 1), req('c', 1)];
    assert.deepEqual(admitFcfs(waiting, ctx({ maxRequests: 2 })), ['a', 'b']);
  });

  it('does not ask the order for more than it can admit', () => {
    let calls = 0;
    const waiting = [req('a', 1), req('b', 1), req('c', 1)];
    const order = queueOrder(3);
    admitInOrder(
      waiting,
      ctx({ maxRequests: 1 }),
      () => {
        calls++;
        return order();
      },
      noReserve,
    );
    assert.equal(calls, 1);
  });
});
