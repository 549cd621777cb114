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
});
