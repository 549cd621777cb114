import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { BasePolicy, NO_COSTS } from '../../src/core/policies/base-policy.ts';
import { Random } from '../../src/core/random.ts';
import type { InstanceId, MigrationRequest, RouteDecision, RouteRequest } from '../../src/core/types.ts';
import { simulate } from '../../src/sim/simulator.ts';
import { simpleCostModel } from '../helpers/simple-cost-model.ts';
import { spacedStream } from '../helpers/spaced-stream.ts';

/**
 * Everything goes to instance 0; at every tick, queued moves of random requests seen so far (waiting,
 * running or finished) to a random instance: only the ones still waiting and never admitted move.
 */
class QueuedMoves extends BasePolicy {
  readonly name = 'queued-moves-test';
  readonly branches = ['zero'] as const;
  readonly seen: string[] = [];
  private asked: MigrationRequest[] = [];
  askedCount = 0;

  constructor(
    private readonly random: Random,
    private readonly instances: number,
  ) {
    super();
  }

  protected choose(request: RouteRequest): RouteDecision {
    this.seen.push(request.id);
    return { instance: 0, branch: 'zero', matchedTokens: 0, costs: NO_COSTS };
  }

  override tick(now: number): void {
    super.tick(now);
    for (let k = 0; k < 3 && this.seen.length > 0; k++) {
      const id = this.random.pick(this.seen);
      const from: InstanceId = this.view.instanceOf(id) ?? 0;
      this.asked.push({ id, from, to: this.random.int(0, this.instances - 1), queued: true });
    }
  }

  migrations(_now: number): readonly MigrationRequest[] {
    const out = this.asked;
    this.asked = [];
    this.askedCount += out.length;
    return out;
  }
}

describe('queued move in the simulator', () => {
  it('moves waiting requests with no KV copied, refuses started ones, and loses or repeats no token', () => {
    const outcomes = { done: 0, aborted: 0 };
    fc.assert(
      fc.property(
        fc.record({
          seed: fc.nat(1000),
          instances: fc.integer({ min: 2, max: 3 }),
          requests: fc.array(
            fc.record({
              prompt: fc.integer({ min: 1, max: 120 }),
              output: fc.integer({ min: 1, max: 80 }),
              gapMs: fc.integer({ min: 0, max: 10 }),
            }),
            { minLength: 1, maxLength: 25 },
          ),
        }),
        (s) => {
          const requests = spacedStream(s.requests);
          const policy = new QueuedMoves(new Random(s.seed), s.instances);
          const result = simulate({
            policy,
            instances: s.instances,
            costModel: simpleCostModel(400),
            engine: { maxRunning: 2 },
            requests,
            tickInterval: 0.002,
            onIteration: (_i, _it, engine) => engine.checkInvariants(),
          });
          for (const r of result.records) assert.ok(r.finish >= 0, `${r.id} finished`);
          const total = requests.reduce((n, r) => n + Math.max(1, r.outputTokens), 0);
          const generated = result.engines.reduce((n, e) => n + e.generationTokensTotal, 0);
          assert.equal(generated, total, 'no token lost or duplicated');
          const log = result.migrationLog!;
          assert.ok(log.every((e) => e.queued === true && (e.event === 'done' || e.event === 'aborted')));
          assert.equal(log.length, policy.askedCount, 'each move ends once');
          for (const e of log) outcomes[e.event as 'done' | 'aborted']++;
          // A done move: the request ran where it went (its last done move's destination), started after it.
          for (const r of result.records) {
            const done = log.filter((e) => e.id === r.id && e.event === 'done');
            if (done.length === 0) continue;
            assert.equal(r.instance, done.at(-1)!.to);
            assert.ok(done.every((d) => d.at <= r.start));
          }
          for (const e of result.engines) assert.equal(e.usedKvTokens, 0);
          for (let i = 0; i < s.instances; i++) assert.equal(policy.inflight(i), 0);
          return true;
        },
      ),
      { numRuns: 60, seed: 14 },
    );
    assert.ok(outcomes.done > 0 && outcomes.aborted > 0, `both outcomes happen: ${JSON.stringify(outcomes)}`);
  });
});
