import { Random } from '../core/random.ts';
import type { Tokens } from '../core/types.ts';
import { PoissonArrivals } from './arrivals.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

/** A request before it gets its id and arrival time. */
export interface RequestDraft {
  readonly tokens: Tokens;
  readonly outputTokens: number;
  /** The client's max_tokens, when the workload sets one (`outputTokens` is at most this). */
  readonly maxTokens?: number;
  readonly sessionId?: string;
}

/** Throws on options no stream can honour. `requests` may be Infinity for an endless stream. */
export function checkWorkloadOptions(options: WorkloadOptions): void {
  const { requests, rps, seed } = options;
  if (!(requests >= 0) || (Number.isFinite(requests) && !Number.isInteger(requests))) {
    throw new Error(`requests must be a non-negative integer or Infinity, got ${requests}`);
  }
  if (!(rps > 0) || !Number.isFinite(rps)) throw new Error(`rps must be a positive number, got ${rps}`);
  if (!Number.isFinite(seed)) throw new Error(`seed must be a finite number, got ${seed}`);
  if (options.instances !== undefined) scaleInstances(options);
}

/** Throws unless `value` (the option `label`) is a positive integer. */
export function checkPositiveInteger(label: string, value: number): void {
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`${label} must be a positive integer, got ${value}`);
}

/** The cluster size a generator scales by: `options.instances`, default 2 (the authors' unit). */
export function scaleInstances(options: WorkloadOptions): number {
  const instances = options.instances ?? 2;
  if (!Number.isInteger(instances) || instances < 1) {
    throw new Error(`instances must be a positive integer, got ${instances}`);
  }
  return instances;
}

/**
 * A workload as a re-iterable: every iteration replays the identical stream from the seed, so several
 * policies can be run on the same requests. `drafts` must be endless; it gets its own random stream,
 * independent of the arrival times.
 */
export function defineWorkload(
  workload: string,
  options: WorkloadOptions,
  drafts: (random: Random) => Iterator<RequestDraft>,
): Iterable<WorkloadRequest> {
  checkWorkloadOptions(options);
  return {
    [Symbol.iterator]: () => stamp(workload, options, drafts),
  };
}

function* stamp(
  workload: string,
  options: WorkloadOptions,
  drafts: (random: Random) => Iterator<RequestDraft>,
): Generator<WorkloadRequest> {
  const root = new Random(options.seed);
  const arrivals = new PoissonArrivals(options.rps, root.fork());
  const source = drafts(root.fork());
  for (let n = 0; n < options.requests; n++) {
    const draft = source.next();
    if (draft.done) throw new Error(`${workload}: the draft stream ended after ${n} requests`);
    const { tokens, outputTokens, maxTokens, sessionId } = draft.value;
    const request: WorkloadRequest = {
      id: `${workload}-${n}`,
      arrival: arrivals.next(),
      tokens,
      outputTokens,
      ...(maxTokens === undefined ? {} : { maxTokens }),
      workload,
    };
    yield sessionId === undefined ? request : { ...request, sessionId };
  }
}
