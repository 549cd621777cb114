import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLpmPolicy } from '../../../src/core/replica-queue/lpm.ts';
import { ctx, ids, req } from './helpers.ts';

describe('lpm', () => {
  const lpm = createLpmPolicy();

  it('admits most cached tokens first, ties in queue order', () => {
    const waiting = [
      req('none', 100, 0),
      req('half', 200, 100),
      req('most', 1000, 900),
      req('half-later', 100, 100),
      req('some', 100, 20),
    ];
    assert.deepEqual(ids(lpm.select(waiting, ctx())), ['most', 'half', 'half-later', 'some', 'none']);
  });

  it('ranks by cached tokens, not by cached share', () => {
    const waiting = [req('share', 10, 10), req('tokens', 1000, 50)];
    assert.deepEqual(ids(lpm.select(waiting, ctx())), ['tokens', 'share']);
  });

  it('stops at the first request in its order that does not fit', () => {
    const waiting = [req('small', 10, 0), req('big', 1000, 500), req('fits', 20, 0)];
    assert.deepEqual(ids(lpm.select(waiting, ctx({ freeKvTokens: 100 }))), []);
  });

  it('serves a queue longer than fcfsAbove unsorted: the last sorted order, then later arrivals', () => {
    const sgl = createLpmPolicy({ fcfsAbove: 3 });
    const first = [req('a', 100, 0), req('b', 100, 50), req('c', 100, 90)];
    // Three waiting: sorted; nothing fits, so the queue stays as sorted (c, b, a).
    assert.deepEqual(ids(sgl.select(first, ctx({ freeKvTokens: 0 }))), []);
    // Four waiting (above 3): no sort, the kept order with the newcomer last, although it caches most.
    const more = [...first, req('d', 100, 100)];
    assert.deepEqual(ids(sgl.select(more, ctx())), ['c', 'b', 'a', 'd']);
  });

  it('sorts again once the queue is back at fcfsAbove or below', () => {
    const sgl = createLpmPolicy({ fcfsAbove: 3 });
    const four = [req('a', 100, 0), req('b', 100, 50), req('c', 100, 90), req('d', 100, 100)];
    // Above 3 from the start: arrival order.
    assert.deepEqual(ids(sgl.select(four, ctx({ maxRequests: 1 }))), ['a']);
    assert.deepEqual(ids(sgl.select(four.slice(1), ctx())), ['d', 'c', 'b']);
  });

  it('an admitted request leaves the list at once: preempted, it comes back after the others', () => {
    const sgl = createLpmPolicy({ fcfsAbove: 3 });
    const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((id) => req(id, 100, 0));
    // Unsorted (4 waiting): arrival order; a is admitted.
    assert.deepEqual(ids(sgl.select([a!, b!, c!, d!], ctx({ maxRequests: 1 }))), ['a']);
    // Preempted before the next round, a is back in the engine's queue (first, as it arrived first),
    // and e has arrived: the kept list b, c, d, then a and e in queue order.
    assert.deepEqual(ids(sgl.select([a!, b!, c!, d!, e!], ctx())), ['b', 'c', 'd', 'a', 'e']);
  });

  it('with fcfsAbove Infinity sorts any queue (the old behaviour)', () => {
    const always = createLpmPolicy({ fcfsAbove: Number.POSITIVE_INFINITY });
    const many = Array.from({ length: 300 }, (_, i) => req(`r${i}`, 100, i % 7));
    const order = ids(always.select(many, ctx({ maxRequests: 300, tokenBudget: 1e9 })));
    assert.equal(order[0], 'r6');
    assert.equal(order.at(-1), 'r294');
    // SGLang's default leaves a 300-request queue in arrival order.
    const sgl = createLpmPolicy();
    assert.deepEqual(ids(sgl.select(many, ctx({ maxRequests: 3 }))), ['r0', 'r1', 'r2']);
  });
});
