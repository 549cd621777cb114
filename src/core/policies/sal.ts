import type {
  FinishCounts,
  InstanceCost,
  InstanceId,
  InstanceInfo,
  InstanceLoadSignal,
  RouteDecision,
  RouteRequest,
} from '../types.ts';
import { withDefaults } from '../with-defaults.ts';
import { BasePolicy, NO_COSTS } from './base-policy.ts';
import { indexAfter } from './support/index-after.ts';
import { PerInstanceNumbers } from './support/per-instance-numbers.ts';
import { RunningMean } from './support/running-mean.ts';

export interface SalOptions {
  /** Average prompt tokens (I-bar) assumed until requests finish. Default 1024. */
  readonly initialAvgInputTokens?: number;
  /** Average output tokens (O-bar) assumed until requests finish. Default 256 (so R starts at 5). */
  readonly initialAvgOutputTokens?: number;
  /** The averages are plain means of the first `averageHorizon` finishes, then EWMAs of that span. Default 1000. */
  readonly averageHorizon?: number;
  /**
   * Units of L. 'iterations' (default, the time-unit form of the reconstruction):
   * L = max(Q / batch token cap, max(0, m - F) / (R x running requests)), engine steps until the
   * queue drains or until finishing requests free the missing memory, so a short free memory weighs
   * as the paper intends. 'tokens' (the reconstruction as written): L = max(Q, max(0, m - F) / R);
   * since Q includes m itself and R >= 1, its memory term can never exceed Q, so it balances queued
   * prefill tokens only: kept for comparison, not the default.
   */
  readonly units?: 'tokens' | 'iterations';
  /** 'iterations' only: prefill tokens per engine step when the instance does not say. Default 1024 (the paper's cap). */
  readonly batchTokenCap?: number;
}

/**
 * Defaults: 1024/256 sit between the Azure 2023 conversation trace (1155 in, 211 out: R = 6.5) and
 * a typical chat mix; the code trace (2048 in, 28 out: R = 74) shows why R must come from feedback.
 */
export const salDefaults: Required<SalOptions> = {
  initialAvgInputTokens: 1024,
  initialAvgOutputTokens: 256,
  averageHorizon: 1000,
  units: 'iterations',
  batchTokenCap: 1024,
};

/** How often the paper polls each server's queued tokens and free memory: 10 times a second. */
/** An instance's cost: the estimated wait as total, the queued prefill work as load. */
export interface SalCost extends InstanceCost {
  readonly load: number;
}

export const salPollIntervalSeconds = 0.1;

/**
 * SAL, the server-aware load balancer of the LARRY/SAL paper (equation RECONSTRUCTED, the paper's
 * text lost it; see research/data-and-deps.md section 3). For each server s after adding request r:
 *
 *   L_s(r) = max(Q_s, max(0, m_r - F_s) / R),   R = (I-bar + O-bar) / O-bar
 *
 * Q_s = polled queued prefill tokens + prompt tokens routed to s since that poll + p_r;
 * F_s = polled free KV tokens - prompt tokens routed to s since that poll; m_r = p_r = r's prompt
 * tokens (the paper counts only the input as memory). Both terms are tokens the server works
 * through before r can start: its queued prefill, or the decode tokens it generates until finishing
 * requests free m_r - F_s tokens of KV (a finished request frees I+O tokens after O decode steps).
 * Route to the argmin; ties go to fewer in-flight requests, then the lower id. See `units` for the
 * time-unit variant, where the memory term can win.
 *
 * An instance not polled yet counts as empty with its whole KV capacity free (plus what was sent to
 * it since it joined). Before any active instance has been polled there is nothing to compare, so
 * SAL falls back to least in-flight with rotating ties (branch 'fallback').
 */
export class SalPolicy extends BasePolicy<SalCost> {
  readonly name = 'sal';
  readonly branches = ['load', 'fallback'] as const;
  private readonly inputTokens: RunningMean;
  private readonly outputTokens: RunningMean;
  /**
   * Prompt tokens sent to each instance since its last poll. Polls come a few times a second;
   * a router trusting only them would herd every request onto the instance that looked lightest,
   * so it adds what it sent itself (the SAL paper does the same). Reset by each poll.
   */
  private readonly sincePoll = new PerInstanceNumbers();
  private readonly iterations: boolean;
  private readonly batchTokenCap: number;
  private last: InstanceId = -1;

  constructor(options: SalOptions = {}) {
    super();
    const o = withDefaults(salDefaults, options);
    if (!(o.initialAvgInputTokens >= 0)) {
      throw new Error(`sal: initialAvgInputTokens must be >= 0, got ${o.initialAvgInputTokens}`);
    }
    if (!(o.initialAvgOutputTokens > 0)) {
      throw new Error(`sal: initialAvgOutputTokens must be > 0, got ${o.initialAvgOutputTokens}`);
    }
    if (!(o.averageHorizon >= 1))
      throw new Error(`sal: averageHorizon must be >= 1, got ${o.averageHorizon}`);
    if (o.units !== 'tokens' && o.units !== 'iterations') {
      throw new Error(`sal: units must be 'tokens' or 'iterations', got ${String(o.units)}`);
    }
    if (!(o.batchTokenCap > 0)) throw new Error(`sal: batchTokenCap must be > 0, got ${o.batchTokenCap}`);
    this.inputTokens = new RunningMean(o.initialAvgInputTokens, o.averageHorizon);
    this.outputTokens = new RunningMean(o.initialAvgOutputTokens, o.averageHorizon);
    this.iterations = o.units === 'iterations';
    this.batchTokenCap = o.batchTokenCap;
  }

  /** R: KV tokens freed per generated token, from the running averages (O-bar floored at 1 token). */
  get memoryFreeRate(): number {
    const output = Math.max(this.outputTokens.mean, 1);
    return (this.inputTokens.mean + output) / output;
  }

  protected choose(
    request: RouteRequest,
    _now: number,
    active: readonly InstanceId[],
  ): RouteDecision<SalCost> {
    const prompt = request.tokens.length;
    const rate = this.memoryFreeRate;
    const costs: SalCost[] = new Array(active.length);
    let polled = false;
    let best = active[0]!;
    let bestLoad = Number.POSITIVE_INFINITY;
    let bestInflight = 0;
    for (let k = 0; k < active.length; k++) {
      const id = active[k]!;
      const state = this.view.state(id)!;
      const sent = this.sincePoll.get(id);
      const signal = state.signal;
      if (signal !== undefined) polled = true;
      const queued = (signal === undefined ? 0 : signal.queuedPrefillTokens) + sent + prompt;
      const free = (signal === undefined ? state.info.kvCapacityTokens : signal.freeKvTokens) - sent;
      const missing = Math.max(0, prompt - free);
      const load = this.iterations
        ? Math.max(
            queued / batchTokens(state.info, this.batchTokenCap),
            missing / (rate * Math.max(signal?.running ?? 0, 1)),
          )
        : Math.max(queued, missing / rate);
      costs[k] = { instance: id, total: load, load: queued };
      if (load < bestLoad || (load === bestLoad && state.inflight < bestInflight)) {
        best = id;
        bestLoad = load;
        bestInflight = state.inflight;
      }
    }
    if (!polled) {
      best = this.view.leastInflight(active, indexAfter(active, this.last));
      this.last = best;
      return { instance: best, branch: 'fallback', matchedTokens: 0, costs: NO_COSTS };
    }
    this.last = best;
    return { instance: best, branch: 'load', matchedTokens: 0, costs };
  }

  override instanceAdded(instance: InstanceId, info: InstanceInfo, now: number): void {
    super.instanceAdded(instance, info, now);
    this.sincePoll.set(instance, 0);
  }

  override loadSignal(instance: InstanceId, signal: InstanceLoadSignal, now: number): void {
    super.loadSignal(instance, signal, now);
    this.sincePoll.set(instance, 0);
  }

  protected override onRouted(request: RouteRequest, decision: RouteDecision): void {
    this.sincePoll.add(decision.instance, request.tokens.length);
  }

  protected override onReleased(
    _id: string,
    _instance: InstanceId,
    _now: number,
    counts: FinishCounts | undefined,
  ): void {
    if (counts === undefined) return;
    this.inputTokens.add(counts.promptTokens);
    this.outputTokens.add(counts.outputTokens);
  }
}

/** Prefill tokens per engine step: the instance's own budget when it gave one. */
function batchTokens(info: InstanceInfo, fallback: number): number {
  const own = info.maxBatchedTokens;
  return own !== undefined && own > 0 ? own : fallback;
}
