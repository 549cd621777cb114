import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { createQueuePolicy } from '../../src/core/replica-queue/registry.ts';
import { Engine } from '../../src/engine/engine.ts';
import { simpleCostModel } from '../helpers/simple-cost-model.ts';
import { seq } from './helpers.ts';

/**
 * A decode engine under TetriInfer's admission rules, fed arrived requests with predictions that may be
 * right, short or long (beyond the capacity even): memory stays within capacity at every iteration,
 * every request finishes exactly once, and the engine never stalls with work left.
 */
const scenarioArb = fc.record({
  admission: fc.constantFrom('greedy', 'reserve-static', 'reserve-dynamic') as fc.Arbitrary<
    'greedy' | 'reserve-static' | 'reserve-dynamic'
  >,
  capacity: fc.integer({ min: 200, max: 600 }),
  requests: fc.array(
    fc.record({
      prompt: fc.integer({ min: 1, max: 120 }),
      output: fc.integer({ min: 2, max: 60 }),
      predicted: fc.option(fc.integer({ min: 1, max: 2000 }), { nil: undefined }),
      bucket: fc.boolean(),
      gap: fc.integer({ min: 0, max: 5 }),
    }),
    { minLength: 1, maxLength: 25 },
  ),
});

describe('engine: TetriInfer decode admission keeps memory and progress', () => {
  it('within capacity at every iteration, each request finished once, no stall', () => {
    fc.assert(
      fc.property(scenarioArb, ({ admission, capacity, requests }) => {
        const engine = new Engine({
          costModel: simpleCostModel(capacity),
          role: 'decode',
          queuePolicy: createQueuePolicy('tetriinfer', { decodeAdmission: admission }),
        });
        const finished = new Map<string, number>();
        let now = 0;
        let next = 0;
        let steps = 0;
        const adoptDue = () => {
          while (next < requests.length) {
            const r = requests[next]!;
            // Fits alone (prompt + output within the capacity), as the simulator's adopt requires.
            if (r.prompt + r.output > capacity) {
              next++;
              continue;
            }
            const id = `r${next}`;
            const prediction =
              r.predicted === undefined
                ? undefined
                : r.bucket
                  ? {
                      tokens: r.predicted,
                      bucket: { low: Math.max(0, r.predicted - 100), high: r.predicted + 100 },
                    }
                  : { tokens: r.predicted };
            engine.adopt(
              {
                id,
                tokens: seq(r.prompt, 1000 * next),
                outputTokens: r.output,
                ...(prediction === undefined ? {} : { prediction }),
              },
              { kvTokens: r.prompt, generated: 1 },
              now,
            );
            next++;
            if (r.gap > 0) break;
          }
        };
        adoptDue();
        while (engine.hasWork() || next < requests.length) {
          assert.ok(steps++ < 100_000, 'no progress');
          if (!engine.hasWork()) {
            adoptDue();
            continue;
          }
          const it = engine.step(now);
          assert.ok(it.batchRequests > 0, 'an engine with work ran nothing');
          engine.checkInvariants();
          assert.ok(engine.kvUsage().usedTokens <= capacity);
          for (const f of it.events.finished) finished.set(f.id, (finished.get(f.id) ?? 0) + 1);
          now += it.duration;
          if (steps % 3 === 0) adoptDue();
        }
        const expected = requests.filter((r) => r.prompt + r.output <= capacity).length;
        assert.equal(finished.size, expected);
        for (const n of finished.values()) assert.equal(n, 1);
      }),
      { numRuns: 150 },
    );
  });
});
