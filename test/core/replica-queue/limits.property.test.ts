import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { prefillTokens, uncachedTokens } from '../../../src/core/replica-queue/admission.ts';
import { larryScore } from '../../../src/core/replica-queue/larry.ts';
import { priorityGroup, proportionalSplit } from '../../../src/core/replica-queue/priority-split.ts';
import {
  createQueuePolicy,
  type QueuePolicyOptions,
  queuePolicyNames,
} from '../../../src/core/replica-queue/registry.ts';
import type { QueueContext, QueuedRequest, QueuePolicy } from '../../../src/core/replica-queue/types.ts';
import { ctxArb, ids, queueArb } from './helpers.ts';

/** `stateful`: the answer also depends on earlier calls (priority-groups' rotation, pia's batch, lpm's kept order), so it is not checked for purity. */
const variants: { name: string; options: QueuePolicyOptions; stateful?: boolean }[] = [
  // pia, tetriinfer's prefill scheduler and lpm (the order its last sort left) remember state between calls.
  ...queuePolicyNames.map((name) => ({
    name,
    options: {},
    ...(name === 'pia' || name === 'tetriinfer' || name === 'lpm' ? { stateful: true } : {}),
  })),
  { name: 'lpm', options: { fcfsAbove: 5 }, stateful: true },
  { name: 'trail', options: { preemptWithin: 8 } },
  { name: 'pia', options: { batchSize: 3 }, stateful: true },
  { name: 'priority-groups', options: { groups: 3 } },
  { name: 'priority-groups', options: { mode: 'rotation' }, stateful: true },
  { name: 'larry', options: { alpha: 0 } },
  { name: 'larry', options: { alpha: 1000 } },
  { name: 'no-preempt', options: { defaultMaxOutputTokens: 0, maxContextTokens: 3000 } },
  { name: 'tetriinfer', options: { prefillOrder: 'ljf', prefillSchedBatch: 3 }, stateful: true },
  { name: 'tetriinfer', options: { prefillOrder: 'fcfs', prefillSchedBatch: 1 }, stateful: true },
];

function checkLimits(policy: QueuePolicy, waiting: readonly QueuedRequest[], context: QueueContext): void {
  const admitted = policy.select(waiting, context);
  assert.ok(admitted.length <= context.maxRequests, 'slots');

  const members = new Set(waiting);
  assert.ok(
    admitted.every((r) => members.has(r)),
    'admitted come from the queue',
  );
  assert.equal(new Set(admitted).size, admitted.length, 'no duplicates');
  assert.equal(new Set(ids(admitted)).size, admitted.length, 'no duplicate ids');

  let kv = 0;
  for (const r of admitted) kv += uncachedTokens(r) + policy.reserveTokens(r);
  assert.ok(kv <= context.freeKvTokens, `KV ${kv} > ${context.freeKvTokens}`);

  // Only the last admitted may overrun the budget, and it found at least 1 token left.
  let prefill = 0;
  for (const r of admitted.slice(0, -1)) prefill += prefillTokens(r);
  if (admitted.length > 0) assert.ok(prefill + 1 <= context.tokenBudget, 'budget');
}

/** The admission rules written out plainly, over a full order. */
function referenceAdmit(
  order: readonly QueuedRequest[],
  context: QueueContext,
  reserve = (_: QueuedRequest) => 0,
) {
  const admitted: QueuedRequest[] = [];
  let kv = 0;
  let prefill = 0;
  for (const r of order) {
    if (admitted.length >= context.maxRequests || prefill + 1 > context.tokenBudget) break;
    if (kv + uncachedTokens(r) + reserve(r) > context.freeKvTokens) break;
    admitted.push(r);
    kv += uncachedTokens(r) + reserve(r);
    prefill += prefillTokens(r);
  }
  return ids(admitted);
}

const frozen = (waiting: QueuedRequest[]) => Object.freeze(waiting.map((r) => Object.freeze({ ...r })));

describe('every policy respects memory, slots and budget', () => {
  for (const { name, options, stateful } of variants) {
    it(`${name} ${JSON.stringify(options)}`, () => {
      // One instance across runs: its scratch buffers are reused with queues of varying length.
      const policy = createQueuePolicy(name, options);
      fc.assert(
        fc.property(queueArb(60), ctxArb, (waiting, context) => {
          const queue = frozen(waiting);
          checkLimits(policy, queue, context);
          if (stateful === true) return;
          const fresh = createQueuePolicy(name, options);
          assert.deepEqual(ids(policy.select(queue, context)), ids(fresh.select(queue, context)), 'pure');
        }),
        { numRuns: 300 },
      );
    });
  }
});

describe('orders, against a plain sort and the plain admission rules', () => {
  const byPosition = (waiting: readonly QueuedRequest[]) => new Map(waiting.map((r, i) => [r, i]));

  it('fcfs and no-preempt admit a prefix of the queue', () => {
    const fcfs = createQueuePolicy('fcfs');
    const noPreempt = createQueuePolicy('no-preempt');
    fc.assert(
      fc.property(queueArb(), ctxArb, (waiting, context) => {
        assert.deepEqual(ids(fcfs.select(waiting, context)), referenceAdmit(waiting, context));
        assert.deepEqual(
          ids(noPreempt.select(waiting, context)),
          referenceAdmit(waiting, context, (r) => noPreempt.reserveTokens(r)),
        );
      }),
    );
  });

  it('lpm admits a prefix of the queue sorted by cached tokens', () => {
    fc.assert(
      fc.property(queueArb(), ctxArb, (waiting, context) => {
        // A fresh queue of at most 128 (SGLang sorts those); ties in queue order.
        const lpm = createQueuePolicy('lpm');
        const cached = (r: QueuedRequest) => r.promptTokens - uncachedTokens(r);
        const order = [...waiting].sort((a, b) => cached(b) - cached(a));
        assert.deepEqual(ids(lpm.select(waiting, context)), referenceAdmit(order, context));
      }),
    );
  });

  it('larry admits a prefix of the queue sorted by score', () => {
    fc.assert(
      fc.property(queueArb(), ctxArb, fc.constantFrom(0, 0.1, 1, 10, 1000), (waiting, context, alpha) => {
        const larry = createQueuePolicy('larry', { alpha });
        const position = byPosition(waiting);
        const score = (r: QueuedRequest) =>
          larryScore(r, context.now, waiting.length, context.kvCapacityTokens, alpha);
        const order = [...waiting].sort((a, b) => score(b) - score(a) || position.get(a)! - position.get(b)!);
        assert.deepEqual(ids(larry.select(waiting, context)), referenceAdmit(order, context));
      }),
    );
  });

  it('priority-groups: quotas over what the iteration admits highest group first, then the rest; FCFS within', () => {
    fc.assert(
      fc.property(queueArb(), ctxArb, fc.integer({ min: 1, max: 12 }), (waiting, context, groups) => {
        const policy = createQueuePolicy('priority-groups', { groups });
        const buckets = Array.from({ length: groups }, (_, g) =>
          waiting.filter((r) => priorityGroup(r.cachedTokens, r.promptTokens, groups) === g),
        );
        const highestFirst = buckets.toReversed().flat();
        const n = referenceAdmit(highestFirst, context).length;
        const quotas = proportionalSplit(
          n,
          buckets.map((b) => b.length),
        );
        const order: QueuedRequest[] = [];
        for (let g = groups - 1; g >= 0; g--) order.push(...buckets[g]!.slice(0, quotas[g]));
        for (let g = groups - 1; g >= 0; g--) order.push(...buckets[g]!.slice(quotas[g]));
        assert.deepEqual(ids(policy.select(waiting, context)), referenceAdmit(order, context));
      }),
    );
  });

  it('priority-groups rotation serves the highest non-empty group first, at most (g + 1) x 10, FCFS', () => {
    fc.assert(
      fc.property(queueArb(), ctxArb, fc.integer({ min: 1, max: 12 }), (waiting, context, groups) => {
        const policy = createQueuePolicy('priority-groups', { groups, mode: 'rotation' });
        const buckets = Array.from({ length: groups }, (_, g) =>
          waiting.filter((r) => priorityGroup(r.cachedTokens, r.promptTokens, groups) === g),
        );
        const top = buckets.findLastIndex((b) => b.length > 0);
        const order = top < 0 ? [] : buckets[top]!.slice(0, (top + 1) * 10);
        assert.deepEqual(ids(policy.select(waiting, context)), referenceAdmit(order, context));
      }),
    );
  });
});
