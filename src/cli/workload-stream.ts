import { createWorkload } from '../workloads/registry.ts';
import { parseWorkloadSpec, traceRequests } from '../workloads/traces/registry.ts';
import type { WorkloadRequest } from '../workloads/types.ts';

/**
 * A factory of identical request streams for a `--workload` value: a generator, or a trace file
 * (read once; re-timed so its mean rate is `rps`).
 */
export function workloadStream(
  workload: string,
  options: { requests: number; rps: number; seed: number },
): () => Iterable<WorkloadRequest> {
  const spec = parseWorkloadSpec(workload);
  if (spec.kind === 'generator') {
    return () => createWorkload(spec.name, options);
  }
  const stream = traceRequests(spec, { seed: options.seed, requests: options.requests, rps: options.rps });
  return () => stream;
}
