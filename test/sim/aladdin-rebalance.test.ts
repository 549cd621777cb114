import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AladdinPolicy } from '../../src/core/policies/aladdin/policy.ts';
import { Random } from '../../src/core/random.ts';
import { simulate } from '../../src/sim/simulator.ts';
import { eq3CostModel } from '../helpers/eq3-cost-model.ts';
import { seq } from '../helpers/simple-cost-model.ts';

/** Eq. 3 exact (test/helpers/eq3-cost-model.ts), 4,000 tokens of KV per instance. */
const costModel = eq3CostModel(4000);

test('aladdin re-balancing in the simulator: queued requests leave a worker whose requests outran their prediction', () => {
  // Half the outputs are 2-10 tokens, half 150-300, all predicted 100: errors both ways. Engines run
  // 3 requests at most, so requests queue behind the long ones where best fit packed them.
  const random = new Random(5);
  const requests = Array.from({ length: 30 }, (_, i) => ({
    id: `r${i}`,
    arrival: i * 0.05,
    tokens: seq(random.int(50, 400), 1000 * i),
    outputTokens: random.next() < 0.5 ? random.int(2, 10) : random.int(150, 300),
    workload: 'test',
  }));
  const run = (rebalance: boolean) =>
    simulate({
      policy: new AladdinPolicy(
        { refit: false, defaultOutputTokens: 100, theta: 1, rebalance },
        { costModel, slo: { ttft: 10, tpot: 0.05 } },
      ),
      instances: 3,
      costModel,
      engine: { maxRunning: 3 },
      requests,
      tickInterval: 0.2,
    });
  const on = run(true);
  const off = run(false);
  const moves = on.migrationLog!.filter((e) => e.event === 'done');
  assert.ok(moves.length > 0);
  assert.ok(moves.every((m) => m.queued === true));
  for (const m of moves) {
    const moved = on.records.find((r) => r.id === m.id)!;
    const stayed = off.records.find((r) => r.id === m.id)!;
    assert.equal(moved.instance, m.to, 'it ran where it went');
    // Until the first move both runs are one: there, without re-balancing, it waited where it was placed.
    if (m === moves[0]) assert.equal(stayed.instance, m.from);
    assert.ok(
      moved.start >= m.at && moved.firstToken < stayed.firstToken,
      `${m.id} got its first token sooner`,
    );
  }
  const mean = (rs: typeof on.records) => rs.reduce((s, r) => s + r.finish - r.arrival, 0) / rs.length;
  assert.ok(mean(on.records) < mean(off.records));
  for (const r of on.records) assert.ok(r.finish >= 0);
});
