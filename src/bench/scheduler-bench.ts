import type { CostModel } from '../core/cost-model/types.ts';
import { createGlobalPolicy, type PolicyContext } from '../core/policies/registry.ts';
import type { GlobalPolicy } from '../core/types.ts';
import { percentiles } from '../report/stats.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import { PseudoEngine } from './pseudo-engine.ts';

export interface SchedulerBenchOptions {
  readonly policies: readonly string[];
  readonly instances: number;
  readonly costModel: CostModel;
  readonly seed: number;
  /** The pre-generated stream every policy routes. */
  readonly requests: readonly WorkloadRequest[];
  /** Stream seconds between policy ticks (background work, timed separately). */
  readonly tickInterval?: number;
  /** Runs per policy (a fresh policy each); the median run by decisions per second is reported. */
  readonly repeat?: number;
  /** A monotonic clock in milliseconds (performance.now): the only I/O this module touches. */
  readonly clock: () => number;
  /** Told after each policy, for progress output. */
  readonly onPolicyDone?: (result: SchedulerBenchResult) => void;
}

export interface SchedulerBenchResult {
  readonly policy: string;
  readonly decisionsPerSec: number;
  readonly p50DecisionMicros: number;
  readonly p99DecisionMicros: number;
  readonly meanDecisionMicros: number;
  /** Wall time spent in tick (background work such as rebalancing), in total. */
  readonly tickMillis: number;
  readonly branches: Readonly<Record<string, number>>;
  /** Share of prompt tokens the policy expected to find cached where it sent them. */
  readonly predictedHitRate: number;
}

/**
 * Routing decisions per second of each policy on one pre-generated stream, no engine. To keep the
 * window and the in-flight counts at a realistic steady state, a deterministic pseudo-engine reports
 * each request's first token after its prefill time and its finish after its decode time (cost
 * model, alone on its instance). Only `route` calls are timed; ticks are timed apart.
 */
export function runSchedulerBench(options: SchedulerBenchOptions): SchedulerBenchResult[] {
  const results: SchedulerBenchResult[] = [];
  const repeat = Math.max(1, options.repeat ?? 1);
  for (const name of options.policies) {
    const context: PolicyContext = { costModel: options.costModel, seed: options.seed };
    const runs: SchedulerBenchResult[] = [];
    for (let r = 0; r < repeat; r++) runs.push(benchOne(createGlobalPolicy(name, context), options));
    // The median run: timings on a shared machine vary from run to run; the median resists both
    // a cold first run and a disturbed one.
    runs.sort((a, b) => a.decisionsPerSec - b.decisionsPerSec);
    const result = runs[Math.floor(runs.length / 2)]!;
    options.onPolicyDone?.(result);
    results.push(result);
  }
  return results;
}

function benchOne(policy: GlobalPolicy, options: SchedulerBenchOptions): SchedulerBenchResult {
  const { clock, costModel, requests } = options;
  for (let i = 0; i < options.instances; i++) {
    policy.instanceAdded(i, { kvCapacityTokens: costModel.kvCapacityTokens }, 0);
  }
  const engine = new PseudoEngine(policy, costModel);
  const micros = new Float64Array(requests.length);
  const branches: Record<string, number> = {};
  const tickInterval = options.tickInterval ?? 1;
  let nextTick = tickInterval;
  let tickMillis = 0;
  let routeMillis = 0;
  let promptTokens = 0;
  let matchedTokens = 0;

  for (let n = 0; n < requests.length; n++) {
    const r = requests[n]!;
    while (nextTick <= r.arrival) {
      engine.deliverUntil(nextTick);
      const t0 = clock();
      policy.tick(nextTick);
      tickMillis += clock() - t0;
      nextTick += tickInterval;
    }
    engine.deliverUntil(r.arrival);
    const t0 = clock();
    const d = policy.route({ id: r.id, tokens: r.tokens, arrival: r.arrival }, r.arrival);
    const elapsed = clock() - t0;
    routeMillis += elapsed;
    micros[n] = elapsed * 1000;
    branches[d.branch] = (branches[d.branch] ?? 0) + 1;
    promptTokens += r.tokens.length;
    matchedTokens += d.matchedTokens;
    engine.admit(r, d);
  }
  const stats = percentiles(micros);
  return {
    policy: policy.name,
    decisionsPerSec: routeMillis > 0 ? (requests.length / routeMillis) * 1000 : 0,
    p50DecisionMicros: stats.p50,
    p99DecisionMicros: stats.p99,
    meanDecisionMicros: stats.mean,
    tickMillis,
    branches,
    predictedHitRate: promptTokens > 0 ? matchedTokens / promptTokens : 0,
  };
}
