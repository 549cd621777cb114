import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSplitwiseMixedPolicy } from '../../../src/core/replica-queue/splitwise-mixed.ts';
import type { QueuedRequest, RunningRequest } from '../../../src/core/replica-queue/types.ts';
import { ctx, ids, req } from './helpers.ts';

const preempted = (r: QueuedRequest, at: number, times = 1): QueuedRequest => ({
  ...r,
  preemptions: times,
  preemptedAt: at,
});
const running = (id: string, enqueuedAt: number, preemptions = 0): RunningRequest => ({
  id,
  enqueuedAt,
  preemptions,
});

describe('splitwise-mixed queue policy', () => {
  it('admits a prompt by preempting the youngest decode first', () => {
    const policy = createSplitwiseMixedPolicy();
    const waiting = [req('p', 500, 0, 10)];
    const decodes = [running('old', 1), running('young', 8), running('mid', 5)];
    const plan = policy.preemptFor!(waiting, decodes, ctx({ now: 10, freeKvTokens: 100 }));
    assert.ok(plan !== undefined);
    assert.equal(plan.target.id, 'p');
    assert.equal(plan.kvTokens, 500);
    assert.deepEqual(
      plan.victims.map((v) => v.id),
      ['young', 'mid', 'old'],
    );
  });

  it('counts the prompts admitted before the target, whole, in the KV to free', () => {
    const policy = createSplitwiseMixedPolicy();
    const waiting = [req('a', 60, 20, 1), req('b', 500, 0, 2)];
    const plan = policy.preemptFor!(waiting, [running('d', 0)], ctx({ now: 3, freeKvTokens: 100 }));
    assert.equal(plan?.target.id, 'b');
    assert.equal(plan?.kvTokens, 560);
  });

  it('never offers a request that reached the preemption cap', () => {
    const policy = createSplitwiseMixedPolicy({ maxPreemptions: 2 });
    const waiting = [req('p', 500, 0, 10)];
    const decodes = [running('twice', 9, 2), running('once', 8, 1), running('never', 7, 0)];
    const plan = policy.preemptFor!(waiting, decodes, ctx({ now: 10, freeKvTokens: 0 }));
    assert.deepEqual(
      plan?.victims.map((v) => v.id),
      ['once', 'never'],
    );
    assert.equal(
      createSplitwiseMixedPolicy().preemptFor!(waiting, [running('x', 9, 1)], ctx({ freeKvTokens: 0 })),
      undefined,
    );
  });

  it('plans nothing when everything fits, for a preempted head, or without budget or slots', () => {
    const policy = createSplitwiseMixedPolicy();
    const decodes = [running('d', 0)];
    assert.equal(policy.preemptFor!([req('p', 50)], decodes, ctx({ freeKvTokens: 100 })), undefined);
    // A young preempted request behind nothing: not a new prompt, so no preemption for it.
    assert.equal(
      policy.preemptFor!([preempted(req('q', 500), 99.5)], decodes, ctx({ freeKvTokens: 0 })),
      undefined,
    );
    assert.equal(
      policy.preemptFor!([req('a', 50), req('p', 500)], decodes, ctx({ freeKvTokens: 100, maxRequests: 1 })),
      undefined,
    );
    assert.equal(
      policy.preemptFor!([req('a', 50), req('p', 500)], decodes, ctx({ freeKvTokens: 100, tokenBudget: 50 })),
      undefined,
    );
  });

  it('orders aged preempted requests first, then new prompts, then young preempted ones', () => {
    const policy = createSplitwiseMixedPolicy({ agingSeconds: 1 });
    const waiting = [
      preempted(req('young', 10, 0, 1), 99.5),
      preempted(req('aged-late', 10, 0, 2), 98.5),
      preempted(req('aged-early', 10, 0, 3), 97),
      req('p1', 10, 0, 4),
      req('p2', 10, 0, 5),
    ];
    assert.deepEqual(ids(policy.select(waiting, ctx({ now: 100 }))), [
      'aged-early',
      'aged-late',
      'p1',
      'p2',
      'young',
    ]);
    // The head that does not fit blocks the rest (head-of-line, as every policy).
    assert.deepEqual(ids(policy.select(waiting, ctx({ now: 100, freeKvTokens: 25 }))), [
      'aged-early',
      'aged-late',
    ]);
  });

  it('validates its options', () => {
    assert.throws(() => createSplitwiseMixedPolicy({ agingSeconds: 0 }), /agingSeconds/);
    assert.throws(() => createSplitwiseMixedPolicy({ maxPreemptions: 1.5 }), /maxPreemptions/);
    assert.equal(createSplitwiseMixedPolicy().preempts, true);
  });
});
