import type { CostModel } from '../core/cost-model/types.ts';
import { E2Policy } from '../core/policies/e2/policy.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import { PseudoEngine } from './pseudo-engine.ts';

export interface MemorySample {
  readonly requests: number;
  /** Stream time in seconds. */
  readonly streamSeconds: number;
  readonly treeNodes: number;
  readonly windowEntries: number;
  /** Tokens cached over all instances, as E2 believes. */
  readonly cachedTokens: number;
  readonly heapMB: number;
  readonly rssMB: number;
}

export interface MemoryBenchOptions {
  readonly stream: Iterable<WorkloadRequest>;
  readonly instances: number;
  readonly costModel: CostModel;
  /** Take a sample every this many requests. */
  readonly every: number;
  /** Heap and RSS in MB (after a GC when the runtime allows one): the one I/O edge. */
  readonly memory: () => { heapMB: number; rssMB: number };
  readonly onSample: (sample: MemorySample) => void;
}

/**
 * Streams requests through E2 with pseudo-engine feedback and samples the tree size and the heap:
 * the tree must stay bounded by what is cached plus what the window holds, however long the stream.
 */
export function runMemoryBench(options: MemoryBenchOptions): MemorySample[] {
  const { costModel } = options;
  const policy = new E2Policy({ costModel });
  for (let i = 0; i < options.instances; i++)
    policy.instanceAdded(i, { kvCapacityTokens: costModel.kvCapacityTokens }, 0);
  const engine = new PseudoEngine(policy, costModel);
  const samples: MemorySample[] = [];
  let n = 0;
  let nextTick = 1;
  let time = 0;
  const sample = () => {
    let cachedTokens = 0;
    for (let i = 0; i < options.instances; i++) cachedTokens += policy.tree.usedTokens(i);
    const s: MemorySample = {
      requests: n,
      streamSeconds: time,
      treeNodes: policy.tree.nodeCount,
      windowEntries: policy.windowSize,
      cachedTokens,
      ...options.memory(),
    };
    samples.push(s);
    options.onSample(s);
  };
  for (const r of options.stream) {
    time = r.arrival;
    while (nextTick <= time) {
      engine.deliverUntil(nextTick);
      policy.tick(nextTick);
      nextTick += 1;
    }
    engine.deliverUntil(time);
    engine.admit(r, policy.route({ id: r.id, tokens: r.tokens, arrival: r.arrival }, r.arrival));
    n++;
    if (n % options.every === 0) sample();
  }
  if (n % options.every !== 0) sample();
  return samples;
}
