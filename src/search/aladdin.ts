/**
 * Aladdin's question (seed 004, Aladdin §5): for a target arrival rate, how many workers, and how many
 * GPUs (tensor parallelism) per worker. Each GPU x TP (x PP, batch, chunk) point is one colocated worker
 * under the `aladdin` policy; its capacity under the SLOs is searched by simulation, workers =
 * ceil(rate / capacity) (Eq. 7 with k5 = 1 / capacity, c5 = 0: the line through the origin that a
 * worker's measured capacity gives). `details.sizing` ranks every point by the GPUs its workers take;
 * `best` is, as for every question with a rate, the cheapest fleet the simulator confirms meets it.
 * The sizing line is src/core/provisioning/sizing.ts's.
 */

import { workersForRate } from '../core/provisioning/sizing.ts';
import type { CapacityCache } from './cache.ts';
import type { PlanResult } from './plan.ts';
import type { PlanRequest, PlanRun } from './request.ts';
import { planVidur, planVidurHere } from './vidur.ts';

export interface WorkerSizing {
  readonly label: string;
  /** Requests per second one worker sustains under the SLOs. */
  readonly capacityPerWorker: number;
  readonly workers: number;
  readonly gpusPerWorker: number;
  readonly gpus: number;
}

export async function planAladdin(request: PlanRequest, run: PlanRun): Promise<PlanResult> {
  return aladdinResult(request, await planVidur(aladdinRequest(request), run));
}

/** The same on this thread, synchronously (experiments). */
export function planAladdinHere(request: PlanRequest, cache: CapacityCache): PlanResult {
  return aladdinResult(request, planVidurHere(aladdinRequest(request), cache));
}

/** One colocated worker per point, run by `aladdin`, ranked for the rate by GPUs. */
function aladdinRequest(request: PlanRequest): PlanRequest {
  if (request.rate === undefined) throw new Error('--question aladdin sizes workers for a rate: give --rate');
  if (request.criterion.kind !== 'slo')
    throw new Error('--question aladdin sizes by SLO attainment; use --criterion slo');
  return {
    ...request,
    objective: 'perGpu',
    space: {
      ...request.space,
      policies: ['aladdin'],
      layouts: [{ kind: 'colocated', replicas: 1 }],
    },
  };
}

function aladdinResult(request: PlanRequest, result: PlanResult): PlanResult {
  const rate = request.rate!;
  const sizing: WorkerSizing[] = result.evaluated
    .filter((e) => e.capacity > 0)
    .map((e) => {
      const gpusPerWorker = e.economics.gpus;
      const workers = workersForRate({ k5: 1 / e.capacity, c5: 0 }, rate);
      return {
        label: e.label,
        capacityPerWorker: e.capacity,
        workers,
        gpusPerWorker,
        gpus: workers * gpusPerWorker,
      };
    })
    .sort((a, b) => a.gpus - b.gpus || a.workers - b.workers);
  return { ...result, question: 'aladdin', details: { rate, sizing } };
}
