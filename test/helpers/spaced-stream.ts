import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { seq } from './simple-cost-model.ts';

/** One request of a test stream: its prompt and output lengths, and the gap since the one before. */
export interface SpacedRequest {
  readonly prompt: number;
  readonly output: number;
  readonly gapMs: number;
}

/**
 * Requests r0, r1, ... arriving after their gaps, each prompt distinct tokens (request i's start at
 * i x `stride`, which must exceed every prompt for no two to share a prefix).
 */
export function spacedStream(specs: readonly SpacedRequest[], stride = 1000): WorkloadRequest[] {
  let at = 0;
  return specs.map((r, i) => {
    at += r.gapMs / 1000;
    return {
      id: `r${i}`,
      arrival: at,
      tokens: seq(r.prompt, stride * i),
      outputTokens: r.output,
      workload: 'test',
    };
  });
}
