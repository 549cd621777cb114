import fc from 'fast-check';
import type { QueueContext, QueuedRequest } from '../../../src/core/replica-queue/types.ts';

/** A waiting request; `cached` defaults to 0 and `at` to 0. */
export function req(id: string, prompt: number, cached = 0, at = 0, maxOutputTokens?: number): QueuedRequest {
  const base = { id, enqueuedAt: at, promptTokens: prompt, cachedTokens: cached };
  return maxOutputTokens === undefined ? base : { ...base, maxOutputTokens };
}

/** A context with room for everything unless overridden. */
export function ctx(overrides: Partial<QueueContext> = {}): QueueContext {
  return {
    now: 100,
    freeKvTokens: 1_000_000,
    kvCapacityTokens: 1_000_000,
    tokenBudget: 1_000_000,
    maxRequests: 1_000_000,
    ...overrides,
  };
}

export function ids(requests: readonly QueuedRequest[]): string[] {
  return requests.map((r) => r.id);
}

/** Queues in queue order: unique ids, strictly increasing enqueue times (whole milliseconds). */
export const queueArb = (maxLength = 40): fc.Arbitrary<QueuedRequest[]> =>
  fc
    .array(
      fc.record({
        gapMs: fc.integer({ min: 1, max: 5000 }),
        prompt: fc.integer({ min: 0, max: 4000 }),
        cachedShare: fc.double({ min: 0, max: 1, noNaN: true }),
        output: fc.option(fc.integer({ min: 0, max: 2000 }), { nil: undefined }),
      }),
      { maxLength },
    )
    .map((rows) => {
      let atMs = 0;
      return rows.map((row, i) => {
        atMs += row.gapMs;
        const cached = Math.round(row.prompt * row.cachedShare);
        return req(`r${i}`, row.prompt, cached, atMs / 1000, row.output);
      });
    });

/** Contexts from starved to ample; `now` is after every enqueue time `queueArb` makes. */
export const ctxArb: fc.Arbitrary<QueueContext> = fc.record({
  now: fc.integer({ min: 200_000, max: 300_000 }),
  freeKvTokens: fc.integer({ min: 0, max: 40_000 }),
  kvCapacityTokens: fc.integer({ min: 100, max: 100_000 }),
  tokenBudget: fc.oneof(fc.integer({ min: 0, max: 8192 }), fc.constant(Number.POSITIVE_INFINITY)),
  maxRequests: fc.oneof(fc.integer({ min: 0, max: 64 }), fc.constant(Number.POSITIVE_INFINITY)),
});
