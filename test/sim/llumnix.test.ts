import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LlumnixPolicy } from '../../src/core/policies/llumnix/policy.ts';
import { simulate } from '../../src/sim/simulator.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { seq, simpleCostModel } from '../helpers/simple-cost-model.ts';

test('llumnix live-migrates the decoding requests of a draining instance away, and every request finishes', () => {
  // Long decodes on both instances; instance 0 drains (Llumnix's terminating instance: infinite virtual usage).
  const requests: WorkloadRequest[] = Array.from({ length: 8 }, (_, i) => ({
    id: `r${i}`,
    arrival: i * 0.001,
    tokens: seq(50 + 10 * i, 1000 * i),
    outputTokens: 400,
    workload: 'test',
  }));
  const policy = new LlumnixPolicy();
  const result = simulate({
    policy,
    instances: 2,
    costModel: simpleCostModel(100_000),
    requests,
    tickInterval: 0.02,
    signalInterval: 0.01,
    fleetActions: [{ at: 0.05, action: 'drain', instance: 0 }],
    onIteration: (_i, _it, engine) => engine.checkInvariants(),
  });
  assert.ok(result.records.every((r) => r.finish >= 0));
  const log = result.migrationLog!;
  const done = log.filter((e) => e.event === 'done');
  assert.ok(done.length > 0, 'some migration completed');
  // Each done migration had rounds and one stop-and-copy before it.
  for (const d of done) {
    const steps = log.filter((e) => e.id === d.id && e.at <= d.at && e.from === d.from);
    assert.ok(steps.some((e) => e.event === 'stop-and-copy'));
  }
  // Every request that was on instance 0 at the drain left it live.
  assert.equal(new Set(done.map((d) => d.id)).size, requests.filter((_, i) => i % 2 === 0).length);
  assert.ok(done.every((d) => d.from === 0 && d.to === 1));
  assert.deepEqual([policy.inflight(0), policy.inflight(1)], [0, 0]);
});
