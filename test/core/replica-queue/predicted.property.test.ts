import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { uncachedTokens } from '../../../src/core/replica-queue/admission.ts';
import { predictedRemaining } from '../../../src/core/replica-queue/predicted.ts';
import { createQueuePolicy } from '../../../src/core/replica-queue/registry.ts';
import type { QueuedRequest } from '../../../src/core/replica-queue/types.ts';
import { ctxArb, ids, queueArb } from './helpers.ts';

/** Queues whose requests carry a prediction (or not) and an output so far. */
const predictedQueueArb = queueArb(40).chain((queue) =>
  fc
    .tuple(
      ...queue.map(() =>
        fc.record({
          predicted: fc.option(fc.integer({ min: 1, max: 3000 }), { nil: undefined }),
          generated: fc.integer({ min: 0, max: 500 }),
        }),
      ),
    )
    .map((rows) =>
      queue.map((r, i): QueuedRequest => {
        const { predicted, generated } = rows[i]!;
        return predicted === undefined
          ? r
          : { ...r, predictedOutputTokens: predicted, generatedTokens: generated };
      }),
    ),
);

/** The ids the plain admission rules take from `order` (no slot or budget limit: ample contexts). */
function prefixThatFits(
  order: readonly QueuedRequest[],
  free: number,
  reserve: (r: QueuedRequest) => number,
) {
  const out: string[] = [];
  let kv = 0;
  for (const r of order) {
    if (kv + uncachedTokens(r) + reserve(r) > free) break;
    kv += uncachedTokens(r) + reserve(r);
    out.push(r.id);
  }
  return out;
}

describe('predicted-length policies (properties)', () => {
  it('trail admits a prefix of the queue stably sorted by predicted remaining output', () => {
    const trail = createQueuePolicy('trail');
    fc.assert(
      fc.property(predictedQueueArb, fc.integer({ min: 0, max: 40_000 }), (queue, free) => {
        const context = {
          now: 1e6,
          freeKvTokens: free,
          kvCapacityTokens: 1e6,
          tokenBudget: 1e9,
          maxRequests: 1e9,
        };
        const order = [...queue].sort((a, b) => predictedRemaining(a) - predictedRemaining(b));
        assert.deepEqual(
          ids(trail.select(queue, context)),
          prefixThatFits(order, free, () => 0),
        );
      }),
    );
  });

  it("s3's admitted prompts and reserves fit in free memory, and each reserve is the predicted remainder less one", () => {
    const s3 = createQueuePolicy('s3');
    fc.assert(
      fc.property(predictedQueueArb, ctxArb, (queue, context) => {
        const admitted = s3.select(queue, context);
        let kv = 0;
        for (const r of admitted) kv += uncachedTokens(r) + s3.reserveTokens(r);
        assert.ok(kv <= context.freeKvTokens);
        assert.ok(admitted.length <= context.maxRequests);
        for (const r of queue) {
          const expected = r.predictedOutputTokens === undefined ? 0 : predictedRemaining(r) - 1;
          assert.equal(s3.reserveTokens(r), expected);
        }
      }),
    );
  });

  it('ltr is pure and admits only from the queue, starved requests ahead of every ranked one', () => {
    fc.assert(
      fc.property(predictedQueueArb, ctxArb, (queue, context) => {
        const a = createQueuePolicy('ltr').select(queue, context);
        const b = createQueuePolicy('ltr').select(queue, context);
        assert.deepEqual(ids(a), ids(b));
        // ctxArb's now is far past every enqueue time: all are starved, so the order is by age (queue order).
        assert.deepEqual(ids(a), ids(queue.slice(0, a.length)));
      }),
    );
  });
});
