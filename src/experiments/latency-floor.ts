import { aloneLatency } from '../core/cost-model/alone.ts';
import { costModelPreset } from '../core/cost-model/presets.ts';
import type { CostModel } from '../core/cost-model/types.ts';
import { type Percentiles, percentiles } from '../report/stats.ts';
import { runChunkTokens, type SimSpec } from '../sim/run.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import { idealCached } from './ideal-hit.ts';

export interface LatencyFloor {
  /** Each measured request's floor, by id. */
  readonly byId: ReadonlyMap<string, number>;
  /** Mean and percentiles of the floors over the measured requests. */
  readonly latency: Percentiles;
}

/**
 * The latency no placement can beat on a stream, request by request: each request alone on an idle
 * instance of the fastest model (its chunked prefill, then one decode step per output token), with every
 * earlier prompt's prefix already cached there (one infinite cache, `idealCached`). Queueing, batching
 * and misses only add to it, so a policy's mean over round robin's can reach at most round robin's mean
 * over the floor's: what any scheduler could gain in that cell. Up to the fitted costs' steps: a prompt
 * chunked at other offsets than the floor's can cost a fraction of a percent less (`belowFloor` counts it).
 *
 * `measuredFrom`: requests arriving earlier are left out of the figures (a run's warm-up), though their
 * prompts still fill the cache.
 */
export function latencyFloor(
  stream: Iterable<WorkloadRequest>,
  models: readonly CostModel[],
  chunkTokens: number,
  measuredFrom = 0,
): LatencyFloor {
  if (models.length === 0) throw new Error('latencyFloor: no cost model');
  const byId = new Map<string, number>();
  for (const { request, cached } of idealCached(stream)) {
    if (request.arrival < measuredFrom) continue;
    // Cold as well as cached: the fitted costs have steps (the A6000 fit's extend-attention term
    // starts above 2^20 new x seq), so a chunk shifted by a few cached tokens can cost more.
    const floor = Math.min(
      ...models.flatMap((m) =>
        (cached > 0 ? [0, cached] : [0]).map(
          (c) =>
            aloneLatency(m, {
              promptTokens: request.tokens.length,
              cachedTokens: c,
              outputTokens: request.outputTokens,
              chunkTokens,
            }).e2e,
        ),
      ),
    );
    byId.set(request.id, floor);
  }
  return { byId, latency: percentiles([...byId.values()]) };
}

/**
 * A simulation's floor: its stream on its models (a fleet's fastest) at its chunk budget, the warm-up
 * left out. Instances' own chunk budgets are not read: the run's (its policy's, the engine's) applies.
 */
export function specFloor(spec: SimSpec): LatencyFloor {
  // Each GPU model once: a fleet of eight alike would otherwise price every request eight times over.
  const models =
    spec.fleet === undefined
      ? [spec.costModel]
      : [...new Set(spec.fleet.map((i) => i.costModel))].map((name) => costModelPreset(name));
  return latencyFloor(spec.requests(), models, runChunkTokens(spec), spec.warmupSeconds ?? 0);
}

/**
 * How many of a run's measured requests finished faster than their floor, and the largest shortfall
 * (1 - latency / floor; 0 where the floor holds).
 */
export function belowFloor(
  floor: LatencyFloor,
  run: { readonly ids: readonly string[]; readonly latency: ArrayLike<number> },
): { readonly count: number; readonly worstShortfall: number } {
  let count = 0;
  let worstShortfall = 0;
  run.ids.forEach((id, k) => {
    const f = floor.byId.get(id);
    if (f === undefined || run.latency[k]! >= f) return;
    count++;
    worstShortfall = Math.max(worstShortfall, 1 - run.latency[k]! / f);
  });
  return { count, worstShortfall };
}
