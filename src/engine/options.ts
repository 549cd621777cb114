import type { CostModel } from '../core/cost-model/types.ts';
import type { LengthPrediction } from '../core/length/types.ts';
import {
  createQueuePolicy,
  type QueuePolicyName,
  type QueuePolicyOptions,
} from '../core/replica-queue/registry.ts';
import type { QueuePolicy } from '../core/replica-queue/types.ts';
import type { Role } from '../core/types.ts';

export interface EngineOptions {
  /** Iteration times and, unless overridden, the KV capacity. */
  readonly costModel: CostModel;
  /** KV capacity in tokens. Default: `costModel.kvCapacityTokens`. */
  readonly kvCapacityTokens?: number;
  /**
   * Waiting-queue policy, by name or as an instance. Default 'fcfs' (vLLM's default); Preble's own
   * engine uses 'priority-groups', SGLang's default is 'lpm'.
   */
  readonly queuePolicy?: QueuePolicyName | QueuePolicy;
  /** Options for a policy given by name (groups, alpha, output reserve). */
  readonly queuePolicyOptions?: QueuePolicyOptions;
  /**
   * Prefill tokens per iteration (the chunked-prefill token budget, running prefills first).
   * Default 512, the budget of SGLang-style chunked prefill that Preble's engine runs with.
   */
  readonly chunkedPrefillTokens?: number;
  /** Batch slots: most requests running (prefilling or decoding) at once. Default 256. */
  readonly maxRunning?: number;
  /**
   * Split prompts larger than the budget left over several iterations. Default true. When false, an
   * admitted request prefills its whole prompt in its first iteration; the budget still bounds
   * admissions (the last one admitted may overshoot it, as in SGLang without chunking).
   */
  readonly enableChunking?: boolean;
  /**
   * When memory is short, evict at least this many tokens at once (fewer only if less is
   * evictable). Decode growth needs a few tokens every iteration; evicting them one iteration at a
   * time would report an eviction (the whole path) every iteration. Default 256; 1 evicts exactly
   * what is needed.
   */
  readonly minEvictionTokens?: number;
  /**
   * llama.cpp's slots: a cached prefix that a running request holds cannot serve another request,
   * which computes it again (and is reported as a cache miss). Default false: paged engines share.
   */
  readonly exclusivePrefixes?: boolean;
  /**
   * The instance's part in prefill/decode disaggregation. 'mixed' (default) runs whole requests and
   * may also run prefill-only requests and adopt KV from elsewhere; 'prefill' runs every request to
   * its first token, then holds its KV for the transfer (`kvReady`, `releaseKv`); 'decode' admits no
   * prefill at all: it only takes `adopt`ed requests, and preempts by swapping (see `Engine`).
   */
  readonly role?: Role;
  /**
   * A new prediction for a request that outran its `prediction` (core/length's `repredict`), asked
   * at the end of the iteration whose token outran it. Absent: predictions are never revised.
   */
  readonly repredict?: (id: string, generated: number, previous: LengthPrediction) => LengthPrediction;
}

export const defaultChunkedPrefillTokens = 512;
export const defaultMaxRunning = 256;
export const defaultQueuePolicy: QueuePolicyName = 'fcfs';
export const defaultMinEvictionTokens = 256;

export interface ResolvedEngineOptions {
  readonly costModel: CostModel;
  readonly kvCapacityTokens: number;
  readonly queuePolicy: QueuePolicy;
  readonly chunkedPrefillTokens: number;
  readonly maxRunning: number;
  readonly enableChunking: boolean;
  readonly minEvictionTokens: number;
  readonly exclusivePrefixes: boolean;
  readonly role: Role;
  readonly repredict: EngineOptions['repredict'];
}

const roles: readonly Role[] = ['mixed', 'prefill', 'decode'];

/** Defaults applied and every value checked; throws one line naming the bad option. */
export function resolveEngineOptions(options: EngineOptions): ResolvedEngineOptions {
  const kvCapacityTokens = options.kvCapacityTokens ?? options.costModel.kvCapacityTokens;
  if (!(kvCapacityTokens > 0))
    throw new Error(`engine: kvCapacityTokens must be > 0, got ${kvCapacityTokens}`);
  const chunkedPrefillTokens = options.chunkedPrefillTokens ?? defaultChunkedPrefillTokens;
  if (!Number.isInteger(chunkedPrefillTokens) || chunkedPrefillTokens < 1) {
    throw new Error(`engine: chunkedPrefillTokens must be an integer >= 1, got ${chunkedPrefillTokens}`);
  }
  const maxRunning = options.maxRunning ?? defaultMaxRunning;
  if (!Number.isInteger(maxRunning) || maxRunning < 1) {
    throw new Error(`engine: maxRunning must be an integer >= 1, got ${maxRunning}`);
  }
  const minEvictionTokens = options.minEvictionTokens ?? defaultMinEvictionTokens;
  if (!Number.isInteger(minEvictionTokens) || minEvictionTokens < 1) {
    throw new Error(`engine: minEvictionTokens must be an integer >= 1, got ${minEvictionTokens}`);
  }
  const role = options.role ?? 'mixed';
  if (!roles.includes(role)) {
    throw new Error(`engine: role must be one of ${roles.join(', ')}, got ${String(role)}`);
  }
  const policy = options.queuePolicy ?? defaultQueuePolicy;
  const queuePolicy =
    typeof policy === 'string' ? createQueuePolicy(policy, options.queuePolicyOptions ?? {}) : policy;
  return {
    costModel: options.costModel,
    kvCapacityTokens,
    queuePolicy,
    chunkedPrefillTokens,
    maxRunning,
    enableChunking: options.enableChunking ?? true,
    exclusivePrefixes: options.exclusivePrefixes ?? false,
    minEvictionTokens,
    role,
    repredict: options.repredict,
  };
}
