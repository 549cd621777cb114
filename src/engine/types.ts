import type { Tokens } from '../core/types.ts';

/** A request as an engine receives it. */
export interface EngineRequest {
  readonly id: string;
  readonly tokens: Tokens;
  /**
   * Tokens to generate. The emulated engine generates exactly this many, or fewer where `maxTokens`
   * or a non-preempting policy's reserve stops it (the simulator knows each request's true output
   * length; the live emulator takes max_tokens). Queue policies never see it.
   */
  readonly outputTokens: number;
  /**
   * The client's max_tokens: generation stops there, and it is what queue policies see of the output
   * (`QueuedRequest.maxOutputTokens`). Absent: the policy's default (no-preempt reserves
   * `defaultMaxOutputTokens`, capped by the context).
   */
  readonly maxTokens?: number;
}

/** What happened during one engine iteration; every time is the iteration's end. */
export interface IterationEvents {
  /** Requests admitted into a batch for the first time (their queueing ended at the iteration start). */
  readonly started: readonly EngineStart[];
  /** Requests whose first output token was produced by this iteration. */
  readonly firstTokens: readonly string[];
  readonly finished: readonly EngineFinish[];
  /** Cache evictions this iteration caused: `path[keptTokens..]` left the cache. */
  readonly evictions: readonly EngineEviction[];
  /** Running requests preempted (their KV freed; they will be recomputed). */
  readonly preempted: readonly string[];
}

export interface EngineStart {
  readonly id: string;
  /** Prompt tokens found in the cache at admission. */
  readonly cachedTokens: number;
}

export interface EngineFinish {
  readonly id: string;
  readonly promptTokens: number;
  /** Prompt tokens served from cache (at the last admission, if it was preempted and readmitted). */
  readonly cachedTokens: number;
  readonly outputTokens: number;
}

export interface EngineEviction {
  readonly path: Tokens;
  readonly keptTokens: number;
}

/** The result of running one iteration. */
export interface Iteration {
  /** Seconds the iteration takes (cost model), 0 when there was nothing to run. */
  readonly duration: number;
  readonly events: IterationEvents;
  /** Batch composition, for metrics. */
  readonly batchRequests: number;
  readonly prefillTokens: number;
  readonly decodeTokens: number;
}

/** Load signals an engine exposes (the vLLM-style metrics of `preble engine`). */
export interface EngineSnapshot {
  readonly running: number;
  readonly waiting: number;
  readonly queuedPrefillTokens: number;
  readonly usedKvTokens: number;
  readonly freeKvTokens: number;
  readonly kvCapacityTokens: number;
  /** Cumulative counters. */
  readonly promptTokensTotal: number;
  readonly cachedPromptTokensTotal: number;
  readonly generationTokensTotal: number;
  readonly preemptionsTotal: number;
}
