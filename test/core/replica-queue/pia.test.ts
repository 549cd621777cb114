import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createPiaPolicy } from '../../../src/core/replica-queue/pia.ts';
import { ctx, ids } from './helpers.ts';
import { predicted } from './predicted-helpers.ts';

describe('pia', () => {
  const queue = [
    predicted('head', 10, 100, 0),
    predicted('far', 10, 1000, 1),
    predicted('near', 10, 120, 2),
    predicted('nearer', 10, 95, 3),
    predicted('mid', 10, 400, 4),
  ];

  it('forms a batch of the oldest and those with the closest predictions, when nothing runs', () => {
    const pia = createPiaPolicy({ batchSize: 3 });
    assert.deepEqual(ids(pia.select(queue, ctx({ runningRequests: 0 }))), ['head', 'nearer', 'near']);
  });

  it('admits nothing while a batch runs and its members are all in', () => {
    const pia = createPiaPolicy({ batchSize: 3 });
    const batch = ids(pia.select(queue, ctx({ runningRequests: 0 })));
    const rest = queue.filter((r) => !batch.includes(r.id));
    assert.deepEqual(ids(pia.select(rest, ctx({ runningRequests: 3 }))), []);
  });

  it('admits the rest of a batch memory held back before anything else, even while it runs', () => {
    const pia = createPiaPolicy({ batchSize: 3 });
    assert.deepEqual(ids(pia.select(queue, ctx({ runningRequests: 0, freeKvTokens: 25 }))), [
      'head',
      'nearer',
    ]);
    const rest = queue.filter((r) => r.id !== 'head' && r.id !== 'nearer');
    assert.deepEqual(ids(pia.select(rest, ctx({ runningRequests: 2 }))), ['near']);
    // A member the engine did not admit after all stays in the batch.
    assert.deepEqual(ids(pia.select(rest, ctx({ runningRequests: 2 }))), ['near']);
    const after = rest.filter((r) => r.id !== 'near');
    assert.deepEqual(ids(pia.select(after, ctx({ runningRequests: 3 }))), []);
    assert.deepEqual(ids(pia.select(after, ctx({ runningRequests: 0 }))), ['far', 'mid']);
  });

  it('rejects a bad batch size', () => {
    assert.throws(() => createPiaPolicy({ batchSize: 0 }), /batchSize/);
  });
});
