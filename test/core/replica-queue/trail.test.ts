import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTrailPolicy } from '../../../src/core/replica-queue/trail.ts';
import { ctx, ids, req } from './helpers.ts';
import { decoding, predicted } from './predicted-helpers.ts';

describe('trail', () => {
  it('admits the shortest predicted remaining output first, unpredicted last in queue order', () => {
    const trail = createTrailPolicy();
    const queue = [
      req('none1', 10),
      predicted('long', 10, 500, 1),
      predicted('short', 10, 20, 2),
      predicted('half-done', 10, 400, 3, 390),
      req('none2', 10),
    ];
    assert.deepEqual(ids(trail.select(queue, ctx())), ['half-done', 'short', 'long', 'none1', 'none2']);
  });

  it('stops at the first request in its order that does not fit', () => {
    const trail = createTrailPolicy();
    const queue = [predicted('big-short', 900, 5), predicted('small-long', 10, 900)];
    assert.deepEqual(ids(trail.select(queue, ctx({ freeKvTokens: 500 }))), []);
  });

  it('never preempts with the default c = 0', () => {
    const trail = createTrailPolicy();
    const plan = trail.preemptFor?.(
      [predicted('new', 100, 5)],
      [decoding('old', 900, 0)],
      ctx({ freeKvTokens: 0 }),
    );
    assert.equal(plan, undefined);
  });

  it('preempts, for a new shorter request, only decodes in their first c tokens with longer remaining, longest first', () => {
    const trail = createTrailPolicy({ preemptWithin: 10 });
    const running = [
      decoding('young-long', 900, 3),
      decoding('old-long', 900, 10),
      decoding('young-short', 4, 1),
      decoding('young-longer', 2000, 9),
    ];
    const plan = trail.preemptFor?.([predicted('new', 100, 5)], running, ctx({ freeKvTokens: 0 }));
    assert.equal(plan?.target.id, 'new');
    assert.equal(plan?.kvTokens, 100);
    assert.deepEqual(
      plan?.victims.map((v) => v.id),
      ['young-longer', 'young-long'],
    );
  });

  it('does not preempt for a request that already ran (a preempted one waits its turn)', () => {
    const trail = createTrailPolicy({ preemptWithin: 10 });
    const again = { ...predicted('again', 100, 50, 0, 5), preemptions: 1 };
    assert.equal(
      trail.preemptFor?.([again], [decoding('young', 900, 1)], ctx({ freeKvTokens: 0 })),
      undefined,
    );
  });

  it('rejects a bad c', () => {
    assert.throws(() => createTrailPolicy({ preemptWithin: -1 }), /preemptWithin/);
  });
});
