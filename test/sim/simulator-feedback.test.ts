import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createHistoryPredictor } from '../../src/core/length/history.ts';
import type { LengthPredictor } from '../../src/core/length/types.ts';
import { RoundRobinPolicy } from '../../src/core/policies/round-robin.ts';
import type { InstanceId, RouteRequest, Tokens } from '../../src/core/types.ts';
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

/** Records what each route call is told. */
class RouteSpy extends RoundRobinPolicy {
  readonly seen: RouteRequest[] = [];
  override route(request: RouteRequest, now: number) {
    this.seen.push(request);
    return super.route(request, now);
  }
}

test('the policy sees max_tokens, never the true output length; the engine stops at max_tokens (review 4.3)', () => {
  const policy = new RouteSpy();
  const requests: WorkloadRequest[] = [
    { id: 'a', arrival: 0, tokens: seq(50, 0), outputTokens: 30, maxTokens: 100, workload: 'test' },
    { id: 'b', arrival: 0.1, tokens: seq(50, 1000), outputTokens: 30, workload: 'test' },
    { id: 'c', arrival: 0.2, tokens: seq(50, 2000), outputTokens: 30, maxTokens: 8, workload: 'test' },
  ];
  const result = simulate({ policy, instances: 1, costModel: simpleCostModel(), requests });
  assert.deepEqual(
    policy.seen.map((r) => r.outputLenHint),
    [100, undefined, 8],
  );
  for (const r of policy.seen) assert.ok(!Object.values(r).includes(30), 'the true length is not passed');
  assert.deepEqual(
    result.records.map((r) => r.outputTokens),
    [30, 30, 8],
  );
});

test('a predictor predicts at arrival for the route request and learns from each finish', () => {
  const policy = new RouteSpy();
  const history = createHistoryPredictor({ inputBucket: 1000, prior: 7 });
  const observed: string[] = [];
  const predictor: LengthPredictor = {
    ...history,
    observe(query, outputTokens, now) {
      observed.push(`${query.id}:${outputTokens}:${query.key}`);
      history.observe?.(query, outputTokens, now);
    },
  };
  // r0 finishes (4 tokens) long before r1 arrives: r1 is predicted from it.
  const requests: WorkloadRequest[] = [0, 1].map((n) => ({
    id: `r${n}`,
    arrival: n * 100,
    tokens: seq(20, 1000 * n),
    outputTokens: 4 + n,
    sessionId: 's',
    workload: 'test',
  }));
  simulate({ policy, instances: 1, costModel: simpleCostModel(1000), requests, predictor });
  assert.deepEqual(
    policy.seen.map((r) => r.predictedOutputTokens),
    [7, 4],
  );
  assert.deepEqual(observed, ['r0:4:s', 'r1:5:s']);
});

test('without a predictor no route request carries a prediction', () => {
  const policy = new RouteSpy();
  const requests: WorkloadRequest[] = [
    { id: 'a', arrival: 0, tokens: seq(20, 1), outputTokens: 2, workload: 'test' },
  ];
  simulate({ policy, instances: 1, costModel: simpleCostModel(1000), requests });
  assert.equal('predictedOutputTokens' in policy.seen[0]!, false);
});
