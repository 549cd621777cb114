import type { FinishCounts, GlobalPolicy, Tokens } from '../core/types.ts';
import type { Dialect, FinalReport } from './dialects.ts';

/**
 * The policy feedback of one attempt, in the contract's order:
 *   requestStarted -> requestFirstToken -> requestFinished | requestFailed.
 *
 * The admission time ("started") is known only once the engine says how long the prompt took before
 * the first token (`preble engine`'s preble_timing.prefill_ms, llama.cpp's timings.prompt_ms, vLLM's
 * metrics.time_to_first_token_ms). Where the first token's chunk says, both calls are made at the
 * first token, started with the earlier time (first token - prefill, never before dispatch): the
 * policy methods take `now`, so a call can report a moment that is already past. Where the engine
 * might say it only in its final report (vLLM), both calls are held until then, and made with the
 * times they describe; policies read these times only from `now`, so holding changes when they hear
 * it, not what they learn. Where the engine never says (`started: 'first-token'`), started is the
 * first token's time.
 */
export class AttemptFeedback {
  private firstTokenAt: number | undefined;
  private reported = false;
  private ended = false;

  constructor(
    private readonly policy: GlobalPolicy,
    private readonly id: string,
    private readonly dialect: Dialect,
    /** Gateway time the attempt was dispatched (started is never reported before it). */
    private readonly dispatchedAt: number,
    /** Gateway seconds per wall-clock second (`timeScale`): engines report wall-clock times. */
    private readonly timeScale: number,
  ) {}

  get firstTokenTime(): number | undefined {
    return this.firstTokenAt;
  }

  /** The replica's first output arrived at `now`; `chunk` is what it came in. */
  firstToken(now: number, chunk: FinalReport): void {
    if (this.firstTokenAt !== undefined) return;
    this.firstTokenAt = now;
    const prefill = this.dialect.prefillSeconds(chunk);
    if (prefill !== undefined) this.report(prefill);
    else if (this.dialect.feedback.started === 'first-token') this.report(0);
    // else hold until the final report
  }

  /** The request finished at `now` with the engine's final report and counts. */
  finished(now: number, report: FinalReport, counts: FinishCounts): void {
    if (this.ended) return;
    if (this.firstTokenAt === undefined) this.firstTokenAt = now;
    if (!this.reported) this.report(this.dialect.prefillSeconds(report) ?? 0);
    this.ended = true;
    this.policy.requestFinished(this.id, now, counts);
  }

  /** The attempt ended without finishing; what was learnt so far is reported first. */
  failed(now: number): void {
    if (this.ended) return;
    if (this.firstTokenAt !== undefined && !this.reported) this.report(0);
    this.ended = true;
    this.policy.requestFailed(this.id, now);
  }

  private report(prefillWallSeconds: number): void {
    const first = this.firstTokenAt!;
    const started = Math.min(first, Math.max(this.dispatchedAt, first - prefillWallSeconds * this.timeScale));
    this.reported = true;
    this.policy.requestStarted(this.id, started);
    this.policy.requestFirstToken(this.id, first);
  }
}

/**
 * Without KV events, the replica's reported cached tokens re-mark the policy's view: when fewer prompt
 * tokens were served from cache than the policy believed (`matchedTokens` of its decision), the part of
 * the prompt beyond what was cached had left the replica's cache, and with it every prefix the policy
 * believed cached below that point. The engine's count is in its tokens; it is scaled to the gateway's
 * by the prompt's length in each (exact when they are the same tokens).
 */
export function cachedTokensEviction(
  tokens: Tokens,
  matchedTokens: number,
  counts: FinishCounts,
): number | undefined {
  if (counts.promptTokens <= 0 || tokens.length === 0) return undefined;
  const share = Math.min(1, Math.max(0, counts.cachedTokens / counts.promptTokens));
  const kept = Math.round(tokens.length * share);
  return kept < Math.min(matchedTokens, tokens.length) ? kept : undefined;
}
