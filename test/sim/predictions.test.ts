import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createHistoryPredictor } from '../../src/core/length/history.ts';
import type { LengthPredictor } from '../../src/core/length/types.ts';
import { RoundRobinPolicy } from '../../src/core/policies/round-robin.ts';
import type { RouteRequest } from '../../src/core/types.ts';
import { simulate } from '../../src/sim/simulator.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { seq, simpleCostModel } from '../helpers/simple-cost-model.ts';

class RouteSpy extends RoundRobinPolicy {
  readonly seen: RouteRequest[] = [];
  override route(request: RouteRequest, now: number) {
    this.seen.push(request);
    return super.route(request, now);
  }
}

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
