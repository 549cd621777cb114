/**
 * Aladdin's placement constraints (seed 004, Aladdin §4, MIP constraints (b)-(e)) on one worker, for
 * the requests it holds plus a candidate. Pure: the worker is a list of jobs with what the policy
 * estimates of them; the fits are Eq. 1-3.
 */
import {
  type AladdinFits,
  contextLimit,
  decodeStepSeconds,
  kvOf,
  prefillSeconds,
} from '../../provisioning/fits.ts';

/** One request as the policy holds it on a worker. */
export interface Job {
  readonly id: string;
  readonly inputTokens: number;
  /** Predicted output tokens (re-predicted on an overrun). */
  predicted: number;
  readonly arrival: number;
  readonly ttft: number;
  readonly atgt: number;
  /** Admitted into a batch (its prefill under way or done). */
  startedAt?: number;
  firstTokenAt?: number;
  /** Seconds of later prefills placed on its worker since its first token (they preempt its decode). */
  stolen: number;
}

export interface Knobs {
  readonly gamma: number;
  readonly theta: number;
}

/** Which constraints apply: a colocated worker all; a prefill worker (c) alone; a decode worker (b) and (e). */
export type WorkerKind = 'mixed' | 'prefill' | 'decode';

/** Output tokens generated so far, estimated from the decode time and the current step time. */
export function generatedEstimate(job: Job, now: number, step: number): number {
  if (job.firstTokenAt === undefined) return 0;
  const ran = step > 0 ? Math.floor((now - job.firstTokenAt) / step) + 1 : 1;
  return Math.max(1, Math.min(ran, job.predicted - 1));
}

/** The L2 norm of (batch size, Σ(l_in + γ·l_out)): Algorithm 1 fills the largest feasible worker first. */
export function capacityNorm(jobs: readonly Job[], gamma: number): number {
  let tokens = 0;
  for (const j of jobs) tokens += j.inputTokens + gamma * j.predicted;
  return Math.hypot(jobs.length, tokens);
}

/** The current decode step of the worker's batch (Eq. 3 at its size and mean context). */
export function stepSeconds(fits: AladdinFits, jobs: readonly Job[], now: number): number {
  if (jobs.length === 0) return 0;
  // First pass at the prompts' context alone, then once more with the tokens that step implies.
  let context = 0;
  for (const j of jobs) context += j.inputTokens;
  const first = Math.max(0, decodeStepSeconds(fits.decode, jobs.length, context / jobs.length));
  context = 0;
  for (const j of jobs) context += j.inputTokens + generatedEstimate(j, now, first);
  return Math.max(0, decodeStepSeconds(fits.decode, jobs.length, context / jobs.length));
}

/** (b): Σ(l_in + γ·l_out) within θ of Eq. 4's context limit at the batch size, for the strictest ATGT. */
export function meetsAtgt(fits: AladdinFits, jobs: readonly Job[], knobs: Knobs): boolean {
  if (jobs.length <= 1) return true; // Eq. 3 holds for b > 1; one request alone decodes at its fastest.
  let tokens = 0;
  let atgt = Number.POSITIVE_INFINITY;
  for (const j of jobs) {
    tokens += j.inputTokens + knobs.gamma * j.predicted;
    atgt = Math.min(atgt, j.atgt);
  }
  return tokens <= knobs.theta * contextLimit(fits.decode, jobs.length, atgt);
}

/**
 * (c): the prefill of every prompt before its first token together ends within each one's remaining
 * TTFT. The paper counts the prompts placed at this heartbeat (a vLLM prefill runs whole in one
 * iteration); our engines chunk prefills, so a prompt admitted but not through its chunks still holds
 * the worker: every prompt without its first token counts, whole (an upper bound).
 */
export function meetsTtft(fits: AladdinFits, jobs: readonly Job[], now: number): boolean {
  let tokens = 0;
  let budget = Number.POSITIVE_INFINITY;
  for (const j of jobs) {
    if (j.firstTokenAt !== undefined) continue;
    tokens += j.inputTokens;
    budget = Math.min(budget, j.ttft - (now - j.arrival));
  }
  return tokens === 0 || prefillSeconds(fits.prefill, tokens) <= budget;
}

/**
 * (d): a new prefill preempts the decodes, so it may take only θ of the slack the requests on the
 * worker have against ATGT: over its decode tokens (l_out − 1: the first token comes from its
 * prefill, and ATGT averages over the rest), T_dec·(l_out − 1) less the decode time at the current
 * step less what later prefills already took (`stolen`). A request predicted at one token has no
 * decode to protect and sets no bound. Every request placed before it counts, not
 * only those decoding: our engines serve in order and chunk prefills, so a request still queued or
 * prefilling decodes while this one's chunks run (the paper's heartbeat starts every placed request
 * before the next placement, so there all of them are ongoing).
 */
export function meetsDecodeSlack(
  fits: AladdinFits,
  jobs: readonly Job[],
  candidate: Job,
  step: number,
  theta: number,
): boolean {
  let slack = Number.POSITIVE_INFINITY;
  for (const j of jobs)
    if (j.predicted > 1) slack = Math.min(slack, (j.predicted - 1) * (j.atgt - step) - j.stolen);
  return prefillSeconds(fits.prefill, candidate.inputTokens) <= theta * slack;
}

/**
 * (e): KV per future iteration within the worker's memory M. A request at context c with r tokens to go
 * holds kv(c + k) at iteration k < r and nothing after; the peak is at one of the iterations just before
 * a request ends (or now), so those are the ones checked.
 */
export function meetsKv(
  fits: AladdinFits,
  jobs: readonly Job[],
  now: number,
  step: number,
  capacity: number,
): boolean {
  if (!Number.isFinite(capacity)) return true;
  const context: number[] = [];
  const remaining: number[] = [];
  for (const j of jobs) {
    const generated = generatedEstimate(j, now, step);
    context.push(j.inputTokens + generated);
    remaining.push(Math.max(1, j.predicted - generated));
  }
  const checks = [0, ...remaining.map((r) => r - 1)];
  for (const k of checks) {
    let kv = 0;
    for (let i = 0; i < context.length; i++) if (remaining[i]! > k) kv += kvOf(fits.kv, context[i]! + k);
    if (kv > capacity) return false;
  }
  return true;
}

/** Whether `candidate` fits on a worker of `kind` holding `jobs` (constraints by kind, above). */
export function fits(
  model: AladdinFits,
  kind: WorkerKind,
  jobs: readonly Job[],
  candidate: Job,
  now: number,
  capacity: number,
  knobs: Knobs,
): boolean {
  const withIt = [...jobs, candidate];
  if (kind === 'prefill') return meetsTtft(model, withIt, now);
  const step = stepSeconds(model, withIt, now);
  if (!meetsAtgt(model, withIt, knobs) || !meetsKv(model, withIt, now, step, capacity)) return false;
  if (kind === 'decode') return true;
  return meetsTtft(model, withIt, now) && meetsDecodeSlack(model, jobs, candidate, step, knobs.theta);
}
