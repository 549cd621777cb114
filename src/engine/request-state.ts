import type { LengthPrediction } from '../core/length/types.ts';
import type { QueuedRequest } from '../core/replica-queue/types.ts';
import type { Tokens } from '../core/types.ts';
import { outputRange, promptHash, withOutputs } from './output-tokens.ts';
import type { CacheNode, MatchCursor, PrefixCache } from './prefix-cache.ts';

/**
 * Waiting in the queue, running its prefill (in chunks), decoding, or gone (finished or aborted);
 * for disaggregation also `held` (a prefill-only request holding its KV until `releaseKv`) and
 * `adopting` (adopted KV waiting for memory in the adopt queue, or swapped out to the host pool or of
 * a decode engine); `migrating`: out of the batch, its KV kept, for a live migration's last copy.
 */
export type Phase = 'waiting' | 'prefill' | 'decode' | 'held' | 'adopting' | 'migrating' | 'gone';

/**
 * One request inside an engine, from submission to finish. While it waits it is the queue
 * policy's `QueuedRequest`: `cachedTokens` is its current match in the cache, computed when read
 * (resumed from the last match, so cheap), so a policy that looks only at the queue's head (fcfs)
 * never matches the rest.
 *
 * Token accounting while it runs: `kvTokens` tokens have KV (the prefill position, then one more per
 * decode step); the first `pin.endLen` of them are pinned in the cache, `privateTokens` more are its
 * own (its not-yet-inserted prompt, reserved whole at admission, and its generated tokens).
 */
export class RequestState implements QueuedRequest {
  readonly id: string;
  readonly prompt: Tokens;
  /**
   * Tokens it generates (at least 1: the prefill always yields one): the engine's knowledge, never
   * the queue policy's (it is not part of `QueuedRequest`).
   */
  readonly outputTokens: number;
  /** The client's max_tokens, if given. */
  readonly maxTokens: number | undefined;
  readonly enqueuedAt: number;
  /** What a (re)admission prefills: the prompt, or after a preemption the prompt plus the output so far. */
  seq: Tokens;
  promptTokens: number;
  /** What the queue policy sees of the output still to come: max_tokens less what was generated. */
  maxOutputTokens: number | undefined;
  readonly cursor: MatchCursor;

  phase: Phase = 'waiting';
  /** Admitted at least once (the `started` event is sent once). */
  started = false;
  /** Times preempted here (recomputed or swapped out): the queue policy's `preemptions`. */
  preemptions = 0;
  /** When it was last preempted (the iteration's start); undefined when never. */
  preemptedAt: number | undefined = undefined;
  /** Prompt tokens found cached at the latest admission. */
  admittedCached = 0;
  /** The deepest node of its pinned path (the root when nothing is pinned), while running. */
  pin: CacheNode;
  /** Prefill position: tokens of `seq` computed or cached. */
  done = 0;
  /**
   * Cached tokens this request must compute again before `done` moves (exclusive prefixes: the
   * prefix was busy with another running request, as a llama.cpp slot would be).
   */
  recomputeLeft = 0;
  kvTokens = 0;
  generated = 0;
  privateTokens = 0;
  /** Part of a non-preempting policy's reserve not yet used by decode growth. */
  reserveLeft = 0;
  /** This iteration: prefill tokens computed (0 = not prefilling), and its batch shape. */
  chunk = 0;
  batchPhase: 'prefill' | 'decode' = 'prefill';
  batchNew = 0;
  batchSeq = 0;
  joined = false;
  /** The length predictor's current guess (`EngineRequest.prediction`), revised when outrun. */
  prediction: LengthPrediction | undefined = undefined;
  /** The queue policy's `outputCeiling`: set by the engine from its KV capacity. */
  outputCeiling = Number.POSITIVE_INFINITY;
  /** Runs to its first token only, then holds its KV (`SubmitOptions.stopAfterPrefill`). */
  stopAfterPrefill = false;
  /** Its KV was adopted by this iteration's admission (it joins the batch as a decode). */
  adoptedNow = false;
  /** KV tokens it holds in the host pool while swapped out (0: none, or an untimed decode-role swap). */
  hostTokens = 0;
  private hash = -1;

  constructor(
    readonly cache: PrefixCache,
    id: string,
    prompt: Tokens,
    outputTokens: number,
    maxTokens: number | undefined,
    enqueuedAt: number,
  ) {
    this.id = id;
    this.prompt = prompt;
    this.outputTokens = outputTokens;
    this.maxTokens = maxTokens;
    this.enqueuedAt = enqueuedAt;
    this.seq = prompt;
    this.promptTokens = prompt.length;
    this.maxOutputTokens = maxTokens;
    this.cursor = cache.newCursor();
    this.pin = cache.root;
  }

  /** The queue policy's view of the prediction and of the output so far. */
  get predictedOutputTokens(): number | undefined {
    return this.prediction?.tokens;
  }

  /** Output tokens generated so far (the queue policy's `generatedTokens`). */
  get generatedTokens(): number {
    return this.generated;
  }

  /** The client's prompt length (the queue policy's `inputTokens`). */
  get inputTokens(): number {
    return this.prompt.length;
  }

  /** Tokens of `seq` cached now (the queue policy's view; exact at the moment it is read). */
  get cachedTokens(): number {
    return this.cache.match(this.cursor, this.seq);
  }

  /** The prompt followed by its first `outputs` generated tokens (the prompt itself for 0). */
  sequence(outputs: number): Tokens {
    if (outputs <= 0) return this.prompt;
    if (this.seq.length === this.prompt.length + outputs) return this.seq;
    return withOutputs(this.prompt, this.outputHash(), outputs);
  }

  /** Generated tokens `from` to `to` (0-based output indices), without the prompt. */
  outputs(from: number, to: number): Tokens {
    return outputRange(this.outputHash(), from, to);
  }

  private outputHash(): number {
    if (this.hash < 0) this.hash = promptHash(this.prompt);
    return this.hash;
  }
}
