import { createWorkload } from './registry.ts';
import { synthetic } from './synthetic.ts';
import { meanRate } from './traces/rate.ts';
import { parseWorkloadSpec, traceArrivals, traceRequests } from './traces/registry.ts';
import type { WorkloadRequest } from './types.ts';

/**
 * A factory of identical request streams for a `--workload` value: a generator or a
 * `synthetic:in=LENGTH,out=LENGTH` form (Poisson at `rps`, default 4), or a trace file (read once; re-timed to `rps` when given, else its own timing).
 * A generator sizes its working set for `instances` (the cluster's; default 2, the authors' unit).
 */
export function workloadStream(
  workload: string,
  options: { requests: number; rps?: number; seed: number; instances?: number },
): () => Iterable<WorkloadRequest> {
  const spec = parseWorkloadSpec(workload);
  if (spec.kind === 'generator') {
    const rps = options.rps ?? 4;
    const { requests, seed, instances } = options;
    return () =>
      createWorkload(spec.name, { requests, rps, seed, ...(instances === undefined ? {} : { instances }) });
  }
  if (spec.kind === 'synthetic') {
    const rps = options.rps ?? 4;
    return () => synthetic(spec.lengths, { requests: options.requests, rps, seed: options.seed });
  }
  const stream = traceRequests(spec, {
    seed: options.seed,
    requests: options.requests,
    ...(options.rps === undefined ? {} : { rps: options.rps }),
  });
  return () => stream;
}

/**
 * The first `requests` rows of a trace workload, read once: how many there are (a run has fewer
 * requests than asked where the trace is shorter) and their own mean arrival rate to three decimals
 * (what a replay at the trace's own timing runs at, and labels it). Undefined for a generator. Fails
 * in one line when it has no rows, or when those rows all arrive at one instant: then there is no
 * rate to replay or re-time to.
 */
export function traceWindow(workload: string, requests: number): { rows: number; rate: number } | undefined {
  const spec = parseWorkloadSpec(workload);
  if (spec.kind === 'generator' || spec.kind === 'synthetic') return undefined;
  const arrivals = traceArrivals(spec, { limit: requests });
  if (arrivals.length === 0) throw new Error(`${workload}: the trace has no rows`);
  const rate = meanRate(arrivals);
  if (Number.isNaN(rate))
    throw new Error(
      `${workload}: its ${arrivals.length === 1 ? 'one row arrives' : `${arrivals.length} rows arrive`} at one instant, so it has no rate to replay or re-time it at`,
    );
  return { rows: arrivals.length, rate: Math.round(rate * 1000) / 1000 };
}
