import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { KvLink } from '../../src/core/fleet/kv-link.ts';
import { LeastLoadPolicy } from '../../src/core/policies/least-load.ts';
import { Random } from '../../src/core/random.ts';
import type { InstanceId, MigrationOutcome, MigrationRequest } from '../../src/core/types.ts';
import { simulate } from '../../src/sim/simulator.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { seq, simpleCostModel } from '../helpers/simple-cost-model.ts';

/** Least-load placement, and at every tick a few random migrations: decoding requests, and some that are not. */
class RandomMigrations extends LeastLoadPolicy {
  readonly ended = new Map<string, MigrationOutcome[]>();
  private readonly random: Random;
  private readonly decoding: string[] = [];
  private asked: MigrationRequest[] = [];
  askedCount = 0;

  constructor(
    seed: number,
    private readonly instances: number,
  ) {
    super();
    this.random = new Random(seed);
  }

  override requestFirstToken(id: string, now: number): void {
    super.requestFirstToken(id, now);
    this.decoding.push(id);
  }

  override tick(now: number): void {
    super.tick(now);
    for (let k = 0; k < 3 && this.decoding.length > 0; k++) {
      const id = this.random.pick(this.decoding);
      const from =
        this.random.next() < 0.9 ? this.view.instanceOf(id) : this.random.int(0, this.instances - 1);
      if (from === undefined) continue;
      this.asked.push({ id, from, to: this.random.int(0, this.instances - 1) });
    }
  }

  migrations(_now: number): readonly MigrationRequest[] {
    const out = this.asked;
    this.asked = [];
    this.askedCount += out.length;
    return out;
  }

  override migrationEnded(
    id: string,
    from: InstanceId,
    to: InstanceId,
    outcome: MigrationOutcome,
    now: number,
  ): void {
    super.migrationEnded(id, from, to, outcome, now);
    this.ended.set(id, [...(this.ended.get(id) ?? []), outcome]);
  }
}

const scenarioArb = fc.record({
  seed: fc.nat(1000),
  instances: fc.integer({ min: 2, max: 3 }),
  capacity: fc.integer({ min: 300, max: 1500 }),
  host: fc.constantFrom(0, 500),
  // Bytes per second with 1 byte per token: 100 tokens take 10 ms (10 decode steps of one request) at 10k.
  bandwidth: fc.constantFrom(2_000, 10_000, 1e9),
  stopCopyTokens: fc.integer({ min: 0, max: 8 }),
  maxRounds: fc.integer({ min: 1, max: 6 }),
  requests: fc.array(
    fc.record({
      prompt: fc.integer({ min: 1, max: 120 }),
      output: fc.integer({ min: 1, max: 150 }),
      gapMs: fc.integer({ min: 0, max: 20 }),
    }),
    { minLength: 1, maxLength: 25 },
  ),
});

describe('live migration (properties)', () => {
  it('conserves memory on both engines, loses and duplicates no token, and ends every migration once', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        let at = 0;
        const requests: WorkloadRequest[] = s.requests.map((r, i) => {
          at += r.gapMs / 1000;
          return {
            id: `r${i}`,
            arrival: at,
            tokens: seq(r.prompt, 1000 * i),
            outputTokens: Math.min(r.output, s.capacity - r.prompt),
            workload: 'test',
          };
        });
        const policy = new RandomMigrations(s.seed, s.instances);
        for (let i = 0; i < s.instances; i++) policy.instanceAdded(i, { kvCapacityTokens: s.capacity }, 0);
        // The simulator adds the instances itself: a fresh policy.
        const fresh = new RandomMigrations(s.seed, s.instances);
        const link: KvLink = { class: 'emulated', bandwidth: s.bandwidth, latency: 0.0005 };
        const result = simulate({
          policy: fresh,
          instances: s.instances,
          costModel: simpleCostModel(s.capacity),
          engine: { hostKvTokens: s.host, minEvictionTokens: 1 },
          requests,
          tickInterval: 0.003,
          migration: { link, stopCopyTokens: s.stopCopyTokens, maxRounds: s.maxRounds },
          onIteration: (_i, _it, engine) => {
            engine.checkInvariants();
            const u = engine.kvUsage();
            assert.ok(u.usedTokens + u.incomingTokens <= s.capacity);
          },
        });
        // Every request finished once, with all its tokens, and the engines generated exactly those.
        for (const r of result.records) assert.ok(r.finish >= 0, `${r.id} finished`);
        const total = requests.reduce((n, r) => n + Math.max(1, r.outputTokens), 0);
        const generated = result.engines.reduce((n, e) => n + e.generationTokensTotal, 0);
        assert.equal(generated, total, 'no token lost or duplicated');
        const log = result.migrationLog!;
        // Each migration ends once, done or aborted, and a done one moved its request.
        const ends = log.filter((e) => e.event === 'done' || e.event === 'aborted');
        assert.equal(ends.length, fresh.askedCount);
        for (const r of result.records) {
          const done = log.filter((e) => e.id === r.id && e.event === 'done');
          if (done.length > 0) assert.ok(done.every((d) => d.from !== d.to));
        }
        for (const e of result.engines) assert.equal(e.usedKvTokens, 0);
        for (let i = 0; i < s.instances; i++) assert.equal(fresh.inflight(i), 0);
        return true;
      }),
      { numRuns: 60 },
    );
  });
});
