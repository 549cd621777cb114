import type { WorkloadRequest } from '../../src/workloads/types.ts';

/** The first `count` items of an iterable, without touching the rest. */
export function take<T>(items: Iterable<T>, count: number): T[] {
  const result: T[] = [];
  if (count <= 0) return result;
  for (const item of items) {
    result.push(item);
    if (result.length >= count) break;
  }
  return result;
}

export function startsWith(tokens: Uint32Array, prefix: Uint32Array): boolean {
  if (prefix.length > tokens.length) return false;
  for (let i = 0; i < prefix.length; i++) if (tokens[i] !== prefix[i]) return false;
  return true;
}

/** Everything that must replay identically, as comparable plain data. */
export function fingerprint(requests: readonly WorkloadRequest[]) {
  return requests.map((r) => ({
    id: r.id,
    arrival: r.arrival,
    tokens: Array.from(r.tokens),
    outputTokens: r.outputTokens,
    sessionId: r.sessionId,
    workload: r.workload,
  }));
}
