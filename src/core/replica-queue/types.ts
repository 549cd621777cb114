import type { DecodingRequest } from './tetri-decode-admission.ts';

/**
 * Local (per-replica) waiting-queue policies. An engine calls `select` once per iteration to pick
 * which waiting requests join the next batch. Policies are pure: the answer depends only on the
 * arguments (scratch buffers may be reused between calls, never observable), except
 * priority-groups' `rotation` mode, which remembers the group it serves next, pia, which
 * remembers the static batch it is admitting, tetriinfer's prefill scheduler, and lpm, which keeps
 * SGLang's list order between calls. A stateful policy object serves one engine.
 *
 * Admission accounting, shared by every policy (see admission.ts):
 * - KV: a request needs `uncached = promptTokens - cachedTokens` new KV tokens plus the policy's
 *   `reserveTokens(request)`; the sum over the admitted requests never exceeds `freeKvTokens`.
 *   A fully cached request needs no new KV: its last prompt token is recomputed into a slot that exists.
 * - Prefill budget: a request costs `max(1, uncached)` tokens of `tokenBudget`; even a fully cached
 *   request recomputes its last prompt token to produce the logits of its first output token.
 *   A request whose cost exceeds the remaining budget is still admitted, as the LAST one of the
 *   iteration, if at least 1 token of budget remains: the engine prefills it in chunks.
 * - Slots: at most `maxRequests` are admitted.
 *
 * Stopping rule, the same for every policy: requests are considered in the policy's order, and
 * selection stops at the first request whose KV need does not fit (head-of-line blocking, as in
 * vLLM's FCFS, SGLang's LPM and LARRY), or when the slots or the budget are used up. A non-fitting
 * request is never skipped: skipping would let a stream of small requests starve a large one.
 */

/** One request in a replica's waiting queue, as the policy sees it. */
export interface QueuedRequest {
  readonly id: string;
  /** Seconds, when it joined this replica's waiting queue (a preempted request keeps its first time). */
  readonly enqueuedAt: number;
  /** Tokens to have in KV before decoding (for a preempted request: prompt plus the output so far). */
  readonly promptTokens: number;
  /** Prompt tokens currently cached on this replica (prefix match); clamped to [0, promptTokens]. */
  readonly cachedTokens: number;
  /** Most output tokens still to generate (max_tokens); only `no-preempt` uses it, defaulting when absent. */
  readonly maxOutputTokens?: number;
  /** Times it was preempted on this replica (0 or absent: a prompt never prefilled here). */
  readonly preemptions?: number;
  /** Seconds, when it was last preempted (absent when never). */
  readonly preemptedAt?: number;
  /**
   * A length predictor's guess at its total output (core/length), revised upward when outrun; absent
   * without a predictor. Policies that use it read the remaining part, `predictedOutputTokens -
   * generatedTokens`, at least 1 (a point inside a bucket may be passed before the bucket's top).
   */
  readonly predictedOutputTokens?: number;
  /** Output tokens generated so far (0 for a new prompt; a preempted request keeps its count). */
  readonly generatedTokens?: number;
  /** The client's prompt length, whatever a preemption added to `promptTokens` (absent: `promptTokens`). */
  readonly inputTokens?: number;
  /**
   * The most output tokens (in all) its KV could ever hold on this replica: the capacity less the
   * client's prompt, plus the token the prefill yields. A reserve by prediction stops there, so a
   * guess past what the memory holds cannot make a request that fits impossible to admit. Absent: no bound.
   */
  readonly outputCeiling?: number;
}

/** A running request in its decode phase, as `preemptFor` sees it. */
export interface RunningRequest {
  readonly id: string;
  /** Seconds, when it first joined this replica's waiting queue. */
  readonly enqueuedAt: number;
  /** Times it was preempted on this replica so far. */
  readonly preemptions: number;
  /** As in `QueuedRequest`: the predicted total output and the output so far. */
  readonly predictedOutputTokens?: number;
  readonly generatedTokens?: number;
  readonly inputTokens?: number;
}

/** What `preemptFor` asks of the engine: free KV for `target` by preempting `victims`, in order. */
export interface PreemptionPlan {
  /** The waiting request to admit (it must still be waiting). */
  readonly target: QueuedRequest;
  /**
   * `freeKvTokens` the policy's selection needs to reach `target` and admit it; the engine preempts
   * victims, in order, until `freeKvTokens` reaches it, and preempts none when even all of them
   * would not free enough.
   */
  readonly kvTokens: number;
  /** Decoding requests the engine may preempt (by recomputation), first victim first. */
  readonly victims: readonly RunningRequest[];
}

/** The replica's state at this iteration, after the running requests took their share. */
export interface QueueContext {
  /** Seconds, the same clock as `enqueuedAt`. */
  readonly now: number;
  /**
   * KV tokens that can be allocated now, counting what the engine can evict. The engine must not
   * evict the cached prefixes of the requests it admits, and, under a non-preempting policy, must
   * already have subtracted the not-yet-used reserve of running requests.
   */
  readonly freeKvTokens: number;
  /** Total KV capacity of the replica, in tokens (Infinity when unknown). */
  readonly kvCapacityTokens: number;
  /** Prefill tokens this iteration may still compute (chunked-prefill budget), after running requests. */
  readonly tokenBudget: number;
  /** Free batch slots. */
  readonly maxRequests: number;
  /** Requests running now (prefilling or decoding); absent when the caller does not say (pia waits for 0). */
  readonly runningRequests?: number;
}

/** A request on (or arriving at) a decode-capable engine, as `admitAdopted` sees it. */
export type { DecodingRequest } from './tetri-decode-admission.ts';

export interface QueuePolicy {
  readonly name: string;
  /**
   * Whether the engine may preempt (and later recompute) running requests when decode growth
   * exceeds memory. False only for `no-preempt`, which reserves each request's whole output instead.
   */
  readonly preempts: boolean;
  /**
   * S3's supervisor: a running request that outran its predicted length (and so the reserve made
   * for it) is aborted and re-queued at the head with the revised prediction (engine `repredict`),
   * recomputing its prompt and output so far. Absent or false: an outrun request runs on.
   */
  readonly requeueOnOutrun?: boolean;
  /** KV tokens to hold for `request` beyond its uncached prompt, from admission until it finishes. */
  reserveTokens(request: QueuedRequest): number;
  /**
   * The requests to admit this iteration, in admission order; only the last one may need more
   * prefill than the budget left (the engine chunks it). `waiting` is in queue order: oldest first,
   * preempted requests back at the head. Neither argument is modified.
   */
  select(waiting: readonly QueuedRequest[], ctx: QueueContext): readonly QueuedRequest[];
  /**
   * Optional (prompts-first scheduling, Splitwise's mixed machines): called by an engine that runs
   * prefills, before `select`, in an iteration that preempted nothing for decode growth and has a free
   * slot and prefill budget. `running`: its decoding requests, in admission order. Returns the
   * waiting request that should be admitted although memory lacks, and which decodes to preempt for
   * it; undefined for none. Policies without it never preempt for admission (the engine as before).
   */
  preemptFor?(
    waiting: readonly QueuedRequest[],
    running: readonly RunningRequest[],
    ctx: QueueContext,
  ): PreemptionPlan | undefined;
  /**
   * Optional (priority schedulers: FastServe): a request's rank, lower served first. With it, an engine
   * swaps a request back in from its host pool only while no waiting request ranks strictly better
   * (and in rank order), so a swapped-out low-priority request does not take the memory a better one
   * waits for. Without it, swapped-out requests resume first, in order (vLLM's swapped queue).
   */
  priority?(request: QueuedRequest, now: number): number;
  /**
   * Optional (TetriInfer's decode admission): asked by an engine for each request in its adopt queue
   * whose KV fits, in order, while something decodes (an engine with nothing decoding admits the head
   * regardless); false keeps it (and those behind it) waiting. `running`: the engine's decoding
   * requests. Policies without it admit whatever fits (greedy, vLLM's).
   */
  admitAdopted?(
    candidate: DecodingRequest,
    running: readonly DecodingRequest[],
    ctx: { readonly freeKvTokens: number; readonly kvCapacityTokens: number },
  ): boolean;
}
