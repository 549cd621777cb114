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
  // Each tick's errors are its own, so a later tick may move a request again (here one goes 1 -> 0 -> 1):
  // it runs where its last move took it, and not before that move was asked.
  const last = new Map(moves.map((m) => [m.id, m]));
  for (const m of last.values()) {
    const moved = on.records.find((r) => r.id === m.id)!;
    assert.equal(moved.instance, m.to, 'it ran where it went last');
    assert.ok(moved.start >= m.at);
  }
  // Until the first move both runs are one: there, without re-balancing, it waited where it was placed,
  // and moved it got its first token sooner. Later moves are not compared one by one: by then the runs
  // differ in more than that request's move.
  const first = moves[0]!;
  const stayed = off.records.find((r) => r.id === first.id)!;
  assert.equal(stayed.instance, first.from);
  assert.ok(on.records.find((r) => r.id === first.id)!.firstToken < stayed.firstToken);
  // Not asserted: that the mean latency drops. Here it does not since the (d) fixes (1.996 s against
  // 1.980 s without re-balancing; docs/provisioning.md, "Re-balancing"), a measurement, not an invariant.
  assert.equal(on.records.length, requests.length);
  for (const r of on.records) assert.ok(r.finish >= 0);
});
