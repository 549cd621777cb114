/**
 * Capacity tasks evaluated on a piscina pool of worker threads (one per core by default), cached
 * answers first. Answers come back in the tasks' order whatever order the threads finish in.
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { CapacityCache } from './cache.ts';
import type { Capacity } from './capacity.ts';
import { type CapacityTask, runCapacityTask } from './task.ts';

const WORKER = fileURLToPath(new URL('./capacity-worker.mjs', import.meta.url));

export interface EvaluateOptions {
  /** Worker threads; default: the available cores. 0 runs the tasks on this thread (tests). */
  readonly threads?: number;
  readonly cache: CapacityCache;
  /** Called after each task, cached or not, with the count done so far. */
  readonly onDone?: (done: number, total: number) => void;
}

export interface Evaluation {
  readonly capacities: readonly Capacity[];
  /** Tasks answered from the cache. */
  readonly cached: number;
}

/** The tasks on this thread, one after another, cached answers first (synchronous callers: experiments). */
export function evaluateTasksHere(tasks: readonly CapacityTask[], cache: CapacityCache): Evaluation {
  let cached = 0;
  const capacities = tasks.map((task) => {
    const hit = cache.get(task);
    if (hit !== undefined) {
      cached++;
      return hit;
    }
    const capacity = runCapacityTask(task);
    cache.set(task, capacity);
    return capacity;
  });
  return { capacities, cached };
}

export async function evaluateTasks(
  tasks: readonly CapacityTask[],
  options: EvaluateOptions,
): Promise<Evaluation> {
  const { cache } = options;
  const capacities: (Capacity | undefined)[] = tasks.map((task) => cache.get(task));
  const cached = capacities.filter((c) => c !== undefined).length;
  let done = cached;
  options.onDone?.(done, tasks.length);
  const finish = (i: number, capacity: Capacity) => {
    capacities[i] = capacity;
    cache.set(tasks[i]!, capacity);
    done++;
    options.onDone?.(done, tasks.length);
  };
  const missing = tasks.flatMap((_, i) => (capacities[i] === undefined ? [i] : []));
  const threads = Math.min(options.threads ?? availableParallelism(), missing.length);
  if (threads <= 0) {
    for (const i of missing) finish(i, runCapacityTask(tasks[i]!));
  } else {
    const pool = new Piscina<CapacityTask, Capacity>({
      filename: WORKER,
      minThreads: threads,
      maxThreads: threads,
      // The main thread's preloads (tsx, the tests' setup) are not the threads' business; the worker
      // entry brings tsx itself (capacity-worker.mjs).
      execArgv: [],
    });
    try {
      await Promise.all(missing.map(async (i) => finish(i, await pool.run(tasks[i]!))));
    } finally {
      await pool.destroy();
    }
  }
  return { capacities: capacities as Capacity[], cached };
}
