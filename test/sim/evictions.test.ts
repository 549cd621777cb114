import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RoundRobinPolicy } from '../../src/core/policies/round-robin.ts';
import type { InstanceId, Tokens } from '../../src/core/types.ts';
import { simulate } from '../../src/sim/simulator.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { seq, simpleCostModel } from '../helpers/simple-cost-model.ts';

/** Records every eviction report with the time it arrives and the time the engine evicted. */
class EvictionSpy extends RoundRobinPolicy {
  readonly reports: { now: number; evictedAt: number | undefined }[] = [];
  override instanceEvicted(
    instance: InstanceId,
    path: Tokens,
    kept: number,
    now: number,
    evictedAt?: number,
  ) {
    super.instanceEvicted(instance, path, kept, now, evictedAt);
    this.reports.push({ now, evictedAt });
  }
}

test('the simulator reports an eviction with the start of the iteration that evicted (review 4.1)', () => {
  const policy = new EvictionSpy();
  const starts = new Set<number>();
  // 300 tokens of KV: each 200-token prompt evicts the previous one's cached prompt.
  const requests: WorkloadRequest[] = [0, 1, 2].map((n) => ({
    id: `r${n}`,
    arrival: n,
    tokens: seq(200, 1000 * n),
    outputTokens: 2,
    workload: 'test',
  }));
  simulate({
    policy,
    instances: 1,
    costModel: simpleCostModel(300),
    requests,
    onIteration: (_i, iteration, _engine, now) => starts.add(now - iteration.duration),
  });
  assert.ok(policy.reports.length > 0, 'the workload evicts');
  for (const r of policy.reports) {
    assert.ok(r.evictedAt !== undefined && r.evictedAt < r.now, 'evicted before the report');
    assert.ok(
      [...starts].some((s) => Math.abs(s - r.evictedAt!) < 1e-12),
      'at an iteration start',
    );
  }
});
