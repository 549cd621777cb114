import type { LengthPrediction } from '../core/length/types.ts';
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
  /**
   * A length predictor's guess at `outputTokens` (issue 15), what queue policies see of it
   * (`QueuedRequest.predictedOutputTokens`); replaced through `EngineOptions.repredict` when outrun.
   */
  readonly prediction?: LengthPrediction;
}

/** How `Engine.submit` runs a request. */
export interface SubmitOptions {
  /**
   * Prefill/decode disaggregation, the prefill leg: run the request to its last prompt token (that
   * iteration also yields its first output token, as on DistServe's and Splitwise's prefill
   * instances), then report `kvReady` and hold its KV until `releaseKv`. A request with a single
   * output token simply finishes there (nothing is left to decode). Default false; true, and
   * required, on a prefill-role engine.
   */
  readonly stopAfterPrefill?: boolean;
}

/**
 * KV that arrived from another instance, for `Engine.adopt`: the request has produced `generated`
 * output tokens elsewhere (at least 1), and the KV of its first `kvTokens` tokens is here, which must
 * be `prompt + generated - 1`: the last generated token has no KV yet, the next decode step computes
 * it (as it would have on the instance that generated it). A `kvReady` event is exactly this.
 */
export interface AdoptedKv {
  readonly kvTokens: number;
  readonly generated: number;
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
  /**
   * Running requests preempted: their KV freed, they will be recomputed; on a decode-role engine,
   * which cannot prefill, swapped out instead (back to the adopt queue, readmitted with their KV).
   */
  readonly preempted: readonly string[];
  /**
   * Prefill-only requests (`stopAfterPrefill`) whose prefill ended this iteration: their first token
   * is in `firstTokens`, and their KV is now held (pinned, counted against memory) until `releaseKv`.
   */
  readonly kvReady: readonly EngineKvReady[];
}

/** A prefill leg's end: the KV a decode instance needs, held here until `Engine.releaseKv`. */
export interface EngineKvReady {
  readonly id: string;
  /** The tokens whose KV is held (the prompt): `path.length === kvTokens`. */
  readonly path: Tokens;
  /** Tokens of KV to transfer (= the prompt; see `AdoptedKv` for the first token's KV). */
  readonly kvTokens: number;
  /** Output tokens produced here (1: the first token). */
  readonly generated: number;
  readonly promptTokens: number;
  /** Prompt tokens found cached at the (latest) admission: the prefill leg's cache hit. */
  readonly cachedTokens: number;
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
  /** Prefill-only requests holding their KV for a transfer (until `releaseKv`), and that KV. */
  readonly heldRequests: number;
  /** Each held request's `kvTokens`, summed (a prefix two of them share counts twice). */
  readonly heldKvTokens: number;
  /** Adopted requests waiting for memory (their KV has arrived; the decode instance's queue). */
  readonly adoptWaiting: number;
  /** Cumulative counters (prompt and cached totals: finished requests and ended prefill legs). */
  readonly promptTokensTotal: number;
  readonly cachedPromptTokensTotal: number;
  readonly generationTokensTotal: number;
  readonly preemptionsTotal: number;
}
