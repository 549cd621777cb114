import type { ClusterMatch, ClusterNode } from '../../cluster-tree.ts';
import type { CostModel } from '../../cost-model/types.ts';
import type {
  FinishCounts,
  InstanceId,
  InstanceInfo,
  RouteDecision,
  RouteRequest,
  Tokens,
} from '../../types.ts';
import { SlidingWindow } from '../../window.ts';
import { withDefaults } from '../../with-defaults.ts';
import { keyPortionOf } from '../e2/key-portion.ts';
import { compareCost, PrefixTreePolicy, WindowShareVictimPricing } from '../e2/tree-costs.ts';
import { DisplacementMeter } from './displacement.ts';
import {
  E2_PLUS_BRANCHES,
  E2_PLUS_DEFAULTS,
  type E2PlusBranch,
  type E2PlusInstanceCost,
  type E2PlusOptions,
} from './options.ts';

/** One routed request as the history window remembers it (popularity and output lengths only). */
interface WindowEntry {
  readonly time: number;
  readonly instance: InstanceId;
  readonly leaf: ClusterNode | null;
  readonly promptTokens: number;
  /** Its predicted prefill seconds on its instance (the instance's recent prefill share). */
  readonly prefill: number;
  /** Output tokens once finished; -1 before. */
  outputTokens: number;
  /** Seconds from routing to its last token once finished (the reference of `latencyPower`). */
  latency: number;
  /** The cost model it finished on (its `latencyReference: 'model'` group); '' before. */
  model: string;
  live: boolean;
  expired: boolean;
}

/** A request in flight: what it still owes its instance. */
interface Flight {
  /** Where it runs (a migration moves it). */
  instance: InstanceId;
  readonly entry: WindowEntry;
  /** Predicted prefill seconds while its first token is not out; -1 after. */
  queuedPrefill: number;
  /** Prompt tokens predicted cached on its instance at routing (its place in an lpm queue). */
  readonly matched: number;
  /** Admitted by the engine (its prefill runs, ahead of anything queued, whatever the queue order). */
  started: boolean;
  /** When it was admitted (its prefill has been running since). */
  startedAt: number;
  /** Output tokens predicted at routing. */
  readonly out: number;
  /** Its mean context over its decode (prompt + half the predicted output), for its instance's step time. */
  readonly context: number;
  /** When its first token came out (it decodes since); -1 before. */
  decodingSince: number;
}

interface InstanceState {
  /** Sum of in-flight requests' `queuedPrefill`. */
  queuedPrefill: number;
  /** The flights still before their first token. */
  readonly queue: Set<Flight>;
  /** Of those, the ones the engine has admitted (prefilling, no longer in its waiting queue). */
  started: number;
  /** In-flight requests past their first token (decoding). */
  readonly decoding: Set<Flight>;
  /** Sum of the in-flight requests' `context` (queued and decoding). */
  contextSum: number;
  /** Live window entries routed here (the eviction cost's N_j denominator). */
  windowRequests: number;
  /** Predicted prefill seconds of the live window entries routed here. */
  windowPrefill: number;
  /** The instance's prefill and decode times: its own when the fleet says (`InstanceInfo.costModel`). */
  model: CostModel;
}

/** Output-length sums over finished requests in the window. */
interface OutputStats {
  finished: number;
  outputTokens: number;
}

/** What a delay to a request in flight weighs under `latencyPower` (tailWeight). */
interface Weighing {
  readonly now: number;
  /** The instance's decode step, to predict what the request has left. */
  readonly pace: number;
  /**
   * The window's mean latency of finished requests (on the instance's cost model under
   * `latencyReference` 'model' or 'model-flights'); 0 while none has finished (everything weighs 1).
   */
  readonly reference: number;
}

/**
 * e2-plus: our global policy beyond Preble's E2 (docs/e2.md, "e2-plus"). One cost comparison over
 * every active instance, each priced with its own cache miss, in place of E2's binary exploit /
 * explore rule; load is the instance's current work (prefill queued there and the batch it decodes),
 * not three minutes of history. The cost of instance i for request r is r's marginal latency there:
 *
 *   Q_i (prefill queued ahead) + P_i (r's prefill of its miss on i)
 *   + out x step_i(B_i + 1) / (1 - s_i)       r's own decode at i's batch and contexts, stretched
 *                                             by the prefill chunks i keeps running (s_i: its
 *                                             recent prefill share of time)
 *   + w x B_i x out x (step_i(B_i+1) - step_i(B_i)) what r's decode slows the B_i others by
 *   + w x (D_i + A_i + lambda_i x Q_i) x P_i  what r's prefill delays the D_i decoding there by,
 *                                             the A_i queued ahead of it (decoding by then), and
 *                                             those arriving while it waits (queued behind it);
 *                                             D_i and A_i count only decodes that outlast the wait
 *   + M_i                                     E2's eviction cost
 *   + rho x P_i                               what the miss displaces, where i's cache churns:
 *                                             rho, the window's share of evicted tokens that
 *                                             requests wanted again (DisplacementMeter)
 *   + tail                                    r's own latency past the window's mean, weighed
 *                                             more under latencyPower > 1 (the default 2 also
 *                                             weighs each delayed request by how slow it already
 *                                             is against requests on its GPU model); 0 at 1
 *
 * A burst on one prefix stays on its holder until the queue there costs more than recomputing the
 * prefix elsewhere, then spreads (fan-out without a hint); imbalance is corrected at every decision.
 * The window H is kept for prefix popularity (M's N_j), the output-length estimate, s_i and the
 * mean latency that latencyPower weighs beyond.
 */
export class E2PlusPolicy extends PrefixTreePolicy<E2PlusInstanceCost> {
  readonly name = 'e2-plus';
  readonly branches = E2_PLUS_BRANCHES;
  readonly options: Required<E2PlusOptions> & { costModel: CostModel };
  private readonly window: SlidingWindow<WindowEntry>;
  private readonly states: InstanceState[] = [];
  private readonly flights = new Map<string, Flight>();
  private readonly cluster: OutputStats = { finished: 0, outputTokens: 0 };
  /** Sum of the finished window entries' latencies (with `cluster.finished`, their mean). */
  private finishedLatency = 0;
  /** Finished window entries' latency sums per cost model (`latencyReference: 'model'`). */
  private readonly modelLatency = new Map<string, { finished: number; latency: number }>();
  /** Output sums per key portion (perPrefixOutput). */
  private readonly byPrefix = new Map<ClusterNode, OutputStats>();
  private lastExpiry = Number.NEGATIVE_INFINITY;
  private routingMatch: ClusterMatch | null = null;
  /** The output length and context `choose` predicted for the request being routed (kept on its flight). */
  private routedOut = 0;
  private routedContext = 0;
  /** When the first request was routed (the arrival rate's time base before a whole window has passed). */
  private firstRouted: number | undefined;
  private readonly victimPricing: WindowShareVictimPricing;
  /** Instances that have reported an eviction: their reports replace the global LRU model (`predictEvictions`). */
  private readonly reportsEvictions = new Set<InstanceId>();
  /** Evicted tokens and those wanted again (`displacement`). */
  private readonly displaced: DisplacementMeter;
  /** The meter's share for the decision being made (read once per decision). */
  private displacedShare = 0;

  constructor(options: Partial<E2PlusOptions> & { costModel: CostModel }) {
    super();
    this.options = { ...withDefaults(E2_PLUS_DEFAULTS, options), costModel: options.costModel };
    if (!['lpm', 'fcfs'].includes(this.options.queueOrder))
      throw new Error(
        `e2-plus option 'queueOrder' must be 'lpm' or 'fcfs', got '${this.options.queueOrder}'`,
      );
    if (!(this.options.lpmFcfsAbove >= 0))
      throw new Error(`e2-plus option 'lpmFcfsAbove' must be >= 0, got ${this.options.lpmFcfsAbove}`);
    const cap = this.options.maxPrefillShare;
    if (!(this.options.latencyPower >= 1))
      throw new Error(`e2-plus option 'latencyPower' must be >= 1, got ${this.options.latencyPower}`);
    if (!['fleet', 'model', 'model-flights'].includes(this.options.latencyReference))
      throw new Error(
        `e2-plus option 'latencyReference' must be 'fleet', 'model' or 'model-flights', got '${this.options.latencyReference}'`,
      );
    if (!(cap >= 0 && cap < 1))
      throw new Error(`e2-plus option 'maxPrefillShare' must be >= 0 and < 1, got ${cap}`);
    this.window = new SlidingWindow(this.options.windowSeconds);
    this.displaced = new DisplacementMeter(this.options.windowSeconds);
    this.victimPricing = new WindowShareVictimPricing(this.options.costModel);
    this.tree.onRemove = (node) => this.byPrefix.delete(node);
    this.tree.onMerge = (parent, child) => {
      const s = this.byPrefix.get(parent);
      if (s === undefined) return;
      this.byPrefix.delete(parent);
      const t = this.byPrefix.get(child);
      if (t === undefined) this.byPrefix.set(child, s);
      else {
        t.finished += s.finished;
        t.outputTokens += s.outputTokens;
      }
    };
  }

  /** Prefill seconds queued on the instance (routed there, first token not yet out). */
  queuedPrefillOf(instance: InstanceId): number {
    return this.states[instance]?.queuedPrefill ?? 0;
  }

  /** Predicted prefill seconds routed to the instance within the window (the prefill share's numerator). */
  windowPrefillOf(instance: InstanceId): number {
    return this.states[instance]?.windowPrefill ?? 0;
  }

  protected choose(
    request: RouteRequest,
    now: number,
    active: readonly InstanceId[],
  ): RouteDecision<E2PlusInstanceCost> {
    if (now - this.lastExpiry > this.options.maxWindowStaleness) this.expireWindow(now);
    const tokens = request.tokens;
    const match = this.tree.match(tokens);
    this.routingMatch = match;
    const mark = this.tree.markPath(match.path);
    const out = this.expectedOutput(match);
    const context = tokens.length + out / 2;
    this.routedOut = out;
    this.routedContext = context;
    if (this.options.displacement) {
      // Tokens seen inside the window but cached nowhere were evicted and are wanted again.
      this.displaced.recordReRequest(match.matched - match.bestCached, now);
      this.displacedShare = this.displaced.share(now);
    }
    const costs: E2PlusInstanceCost[] = [];
    const arrivalShare = this.options.laterArrivals ? this.arrivalRate(now) / active.length : 0;
    let best = -1;
    let bestCost = Number.POSITIVE_INFINITY;
    let bestMatched = 0;
    for (const i of active) {
      const matched = this.tree.cachedOn(i);
      const cost = this.costOf(i, tokens.length, matched, out, context, mark, now, arrivalShare);
      costs.push(cost);
      if (best < 0 || this.better(cost.total, i, bestCost, best)) {
        best = i;
        bestCost = cost.total;
        bestMatched = matched;
      }
    }
    const branch: E2PlusBranch = bestMatched > 0 && bestMatched >= match.bestCached ? 'exploit' : 'explore';
    return { instance: best, branch, matchedTokens: bestMatched, costs };
  }

  /** The marginal latency of placing a request on `instance` (see the class comment). */
  costOf(
    instance: InstanceId,
    promptTokens: number,
    matched: number,
    out: number,
    context: number,
    mark: number,
    now: number,
    arrivalShare = 0,
  ): E2PlusInstanceCost {
    const state = this.stateFor(instance);
    const model = state.model;
    const batch = this.view.inflight(instance);
    const missed = promptTokens - matched;
    const prefill = model.prefillTime(missed, matched);
    const flights = state.queue.size + state.decoding.size;
    const withIt = this.options.instanceContexts
      ? stepTime(model, batch + 1, (state.contextSum + context) / (flights + 1))
      : stepTime(model, batch + 1, context);
    let decode = out * withIt;
    let interference = 0;
    const queued = this.queuedAhead(state, matched, now);
    const stretch = this.options.prefillShare ? 1 / (1 - this.prefillShareOf(state, now)) : 1;
    decode *= stretch;
    const fleetMean = this.options.latencyPower > 1 ? this.meanLatency() : 0;
    const by = this.options.latencyReference;
    // What the requests r delays are measured against, and what r's own latency is.
    const reference = by === 'fleet' ? fleetMean : this.modelMeanLatency(model, fleetMean);
    // r's own latency beyond the mean, under latencyPower (0 at 1).
    const tail = this.tailExcess(queued + prefill + decode, by === 'model' ? reference : fleetMean);
    if (this.options.interference) {
      const w = this.options.interferenceWeight;
      // The instance's own decode step (its requests' contexts, not r's): the step without r under
      // instanceContexts, and what paces the decodes r's prefill delays.
      const own = this.instanceStep(state, batch);
      const without = this.options.instanceContexts ? (batch > 0 ? own : 0) : stepTime(model, batch, context);
      const weighing: Weighing = { now, pace: own * stretch, reference };
      const slowed = reference > 0 ? this.weightedFlights(state, weighing) : batch;
      decode += w * slowed * out * Math.max(0, withIt - without);
      // Those queued ahead are prefilled first: by the time r's prefill runs, they decode too;
      // and those arriving while r waits queue behind it (weighing 1: their latency is the mean's).
      const step = this.options.decodeEnds ? weighing.pace : 0;
      const delayed =
        this.decodingAt(state, queued, step, weighing) +
        (this.options.aheadDecoding ? this.queuedAheadCount(state, matched, queued, step, weighing) : 0) +
        arrivalShare * queued;
      interference = w * delayed * prefill;
    }
    let eviction = 0;
    if (this.options.evictionCost && state.windowRequests > 0) {
      this.victimPricing.requests = state.windowRequests;
      this.victimPricing.model = model;
      eviction =
        this.options.evictionWeight *
        this.tree.evictionCost(instance, missed, mark, this.victimPricing.price);
    }
    // Each token computed where the cache churns evicts one, wanted again with the measured share.
    const displacement =
      this.options.displacement && this.displaced.churns(instance, now) ? this.displacedShare * prefill : 0;
    const total = queued + prefill + decode + interference + eviction + displacement + tail;
    return {
      instance,
      total,
      queued,
      prefill,
      decode,
      interference,
      eviction,
      displacement,
      tail,
      matchedTokens: matched,
    };
  }

  /**
   * Prefill seconds queued ahead of a request with `matched` cached tokens, in the engines' queue
   * order: under lpm, queued requests with fewer cached tokens go after it. (Counting also the queued
   * request that is still computing the prefix this one counts as cached was measured worse on
   * Video QA and LooGLE: it sends siblings away from a prefix being filled; docs/e2.md.)
   */
  private queuedAhead(state: InstanceState, matched: number, now: number): number {
    if (state.queue.size === 0) return 0;
    const remaining = this.options.remainingPrefill;
    const sorted = this.sortsQueue(state);
    if (!sorted && !remaining) return state.queuedPrefill;
    let ahead = 0;
    for (const f of state.queue) {
      if (!this.isAhead(f, matched, sorted)) continue;
      // An admitted prefill has been running since it started: only what is left of it is ahead.
      ahead += f.started && remaining ? Math.max(0, f.queuedPrefill - (now - f.startedAt)) : f.queuedPrefill;
    }
    return ahead;
  }

  /**
   * Requests queued ahead of a request with `matched` cached tokens, in the order of `queuedAhead`
   * (admitted ones, and under lpm those with at least as many cached tokens): they decode by the time
   * its prefill runs, so it delays them as it delays the instance's decoding requests.
   */
  private queuedAheadCount(
    state: InstanceState,
    matched: number,
    wait: number,
    step: number,
    weighing: Weighing,
  ): number {
    const sorted = this.sortsQueue(state);
    let ahead = 0;
    for (const f of state.queue) {
      if (!this.isAhead(f, matched, sorted)) continue;
      // With decodeEnds (step > 0): prefilled at a uniform time in the wait, it still decodes at its
      // end with the chance that its decode outlasts what is left of the wait.
      const share = step > 0 && wait > 0 ? Math.min(1, (f.out * step) / wait) : 1;
      ahead += share * this.tailWeight(f, weighing);
    }
    return ahead;
  }

  /**
   * The instance's decoding requests expected still to decode after `wait` seconds (all of them
   * without decodeEnds, step 0): one with `left` seconds of predicted decode counts min(1, left /
   * wait); one that has outrun its prediction counts whole (long outputs run long; expecting it to
   * run as long again as it has was measured worse on Video QA overload, docs/e2.md step 16).
   */
  private decodingAt(state: InstanceState, wait: number, step: number, weighing: Weighing): number {
    const ends = step > 0 && wait > 0;
    if (!ends && weighing.reference <= 0) return state.decoding.size;
    let n = 0;
    for (const f of state.decoding) {
      const predicted = f.out * step - (weighing.now - f.decodingSince);
      const share = !ends || predicted <= 0 ? 1 : Math.min(1, predicted / wait);
      n += share * this.tailWeight(f, weighing);
    }
    return n;
  }

  /**
   * The window's mean latency of finished requests (routing to last token), the point beyond which
   * `latencyPower` weighs latency more; 0 while none in the window has finished.
   */
  private meanLatency(): number {
    return this.cluster.finished > 0 ? this.finishedLatency / this.cluster.finished : 0;
  }

  /** The window's mean latency of requests finished on instances of `model`; the fleet's while none has. */
  private modelMeanLatency(model: CostModel, fleetMean: number): number {
    if (fleetMean <= 0) return 0;
    const s = this.modelLatency.get(model.name);
    return s !== undefined && s.finished > 0 ? s.latency / s.finished : fleetMean;
  }

  private countModelLatency(e: WindowEntry, sign: 1 | -1): void {
    let s = this.modelLatency.get(e.model);
    if (s === undefined) {
      if (sign < 0) return;
      s = { finished: 0, latency: 0 };
      this.modelLatency.set(e.model, s);
    }
    s.finished += sign;
    s.latency = s.finished > 0 ? s.latency + sign * e.latency : 0;
  }

  /**
   * Under `latencyPower` p > 1, a latency L counts as itself up to the reference m and as
   * m + (L^p / m^(p-1) - m) / p beyond it (joining at m with slope 1, slope (L / m)^(p-1) after):
   * what r's own latency adds beyond counting as itself.
   */
  private tailExcess(latency: number, reference: number): number {
    if (reference <= 0 || latency <= reference) return 0;
    const p = this.options.latencyPower;
    return reference + (latency * (latency / reference) ** (p - 1) - reference) / p - latency;
  }

  /**
   * What a second's delay to flight `f` weighs: the slope of the objective at its expected latency
   * (time since routing plus its predicted prefill and decode left), max(1, L / m)^(p - 1); 1
   * without a reference. A request already slow weighs more: delaying it lengthens the tail.
   */
  private tailWeight(f: Flight, weighing: Weighing): number {
    const { now, pace, reference } = weighing;
    if (reference <= 0) return 1;
    const left =
      f.decodingSince >= 0
        ? Math.max(0, f.out * pace - (now - f.decodingSince))
        : Math.max(0, f.queuedPrefill) + f.out * pace;
    const ratio = (now - f.entry.time + left) / reference;
    return ratio <= 1 ? 1 : ratio ** (this.options.latencyPower - 1);
  }

  /** The instance's flights (queued and decoding), each counted by its `tailWeight`. */
  private weightedFlights(state: InstanceState, weighing: Weighing): number {
    let n = 0;
    for (const f of state.queue) n += this.tailWeight(f, weighing);
    for (const f of state.decoding) n += this.tailWeight(f, weighing);
    return n;
  }

  /** One decode iteration of the instance's own batch at its requests' mean context. */
  private instanceStep(state: InstanceState, batch: number): number {
    const flights = state.queue.size + state.decoding.size;
    return stepTime(state.model, Math.max(1, batch), flights > 0 ? state.contextSum / flights : 0);
  }

  /**
   * Whether the instance's engine sorts its queue by cached tokens when the request joins it: under
   * lpm, while its waiting queue (the flights not yet admitted, and the request) is no longer than
   * `lpmFcfsAbove`.
   */
  private sortsQueue(state: InstanceState): boolean {
    const waiting = state.queue.size - state.started + 1;
    return this.options.queueOrder === 'lpm' && waiting <= this.options.lpmFcfsAbove;
  }

  /**
   * Whether queued flight `f` goes before a request with `matched` cached tokens (see `queuedAhead`),
   * in a queue the engine sorts by cached tokens (`sorted`) or serves in order.
   */
  private isAhead(f: Flight, matched: number, sorted: boolean): boolean {
    if (!sorted || f.matched >= matched) return true;
    return f.started && this.options.startedAhead;
  }

  /**
   * Requests routed per second: the window's count over the time it covers (H, or since the first
   * request while H has not passed, at least 1 s). After a quiet spell the rate is the window's low
   * count, and two arrivals a millisecond apart are not 2,000 a second.
   */
  private arrivalRate(now: number): number {
    if (this.firstRouted === undefined) return 0;
    const covered = Math.min(this.options.windowSeconds, now - this.firstRouted);
    return this.window.size / Math.max(1, covered);
  }

  /**
   * The share of the instance's time its recent prefills took (the window's predicted prefill seconds
   * routed here over the time the window covers), at most `maxPrefillShare`: r's decode iterations
   * share the instance with the prefill chunks that keep arriving there, so its decode stretches by
   * 1 / (1 - share). Prefill routed beyond the cap queues (Q_i prices it) rather than slowing decodes more.
   */
  private prefillShareOf(state: InstanceState, now: number): number {
    if (this.firstRouted === undefined) return 0;
    const covered = Math.max(1, Math.min(this.options.windowSeconds, now - this.firstRouted));
    return Math.min(this.options.maxPrefillShare, state.windowPrefill / covered);
  }

  private better(cost: number, instance: InstanceId, bestCost: number, bestInstance: InstanceId): boolean {
    const order = compareCost(cost, bestCost);
    if (order !== 0) return order < 0;
    const a = this.view.inflight(instance);
    const b = this.view.inflight(bestInstance);
    if (a !== b) return a < b;
    // Equal work: the instance with more free KV takes the new prefix (spreads the working set).
    const ua = this.tree.usedTokens(instance) / Math.max(1, this.tree.capacityTokens(instance));
    const ub = this.tree.usedTokens(bestInstance) / Math.max(1, this.tree.capacityTokens(bestInstance));
    if (this.options.memoryTieBreak && ua !== ub) return ua < ub;
    return instance < bestInstance;
  }

  /** Output length: the window's average for the request's key portion, else the cluster's, else the default. */
  private expectedOutput(match: ClusterMatch): number {
    if (this.options.perPrefixOutput && match.path.length > 0) {
      const kp = keyPortionOf(match.path[match.path.length - 1]!);
      const s = kp === null ? undefined : this.byPrefix.get(kp);
      if (s !== undefined && s.finished > 0) return s.outputTokens / s.finished;
    }
    if (this.cluster.finished > 0) return this.cluster.outputTokens / this.cluster.finished;
    return this.options.defaultOutputTokens;
  }

  protected override onRouted(
    request: RouteRequest,
    decision: RouteDecision<E2PlusInstanceCost>,
    now: number,
  ): void {
    const instance = decision.instance;
    const time = this.window.timeFrom(now);
    const leaf = this.tree.assign(request.tokens, instance, time, true, this.routingMatch ?? undefined);
    this.routingMatch = null;
    const chosen = decision.costs.find((c) => c.instance === instance);
    const queuedPrefill = chosen?.prefill ?? 0;
    const entry: WindowEntry = {
      time,
      instance,
      leaf,
      promptTokens: request.tokens.length,
      prefill: queuedPrefill,
      outputTokens: -1,
      latency: -1,
      model: '',
      live: true,
      expired: false,
    };
    this.window.push(entry);
    this.firstRouted ??= time;
    const state = this.stateFor(instance);
    state.windowRequests++;
    state.windowPrefill += queuedPrefill;
    state.queuedPrefill += queuedPrefill;
    const flight: Flight = {
      instance,
      entry,
      queuedPrefill,
      matched: decision.matchedTokens,
      started: false,
      startedAt: 0,
      out: this.routedOut,
      context: this.routedContext,
      decodingSince: -1,
    };
    state.queue.add(flight);
    state.contextSum += flight.context;
    this.flights.set(request.id, flight);
    if (this.options.predictEvictions && !this.reportsEvictions.has(instance)) {
      const before = this.tree.usedTokens(instance);
      this.tree.evictToCapacity(instance);
      this.countEviction(instance, before, time);
    }
  }

  /**
   * An instance that reports evictions is the authority on its cache: the global LRU model stops for
   * it. The model evicts when a request is routed, as if the KV of every queued request were already
   * resident; the engine evicts only when a request is admitted, and keeps what running requests pin.
   * Under a queue the model drops prefixes the engine still holds, and the holders look like misses
   * (docs/e2.md, e2-plus, step 12).
   */
  override instanceEvicted(
    instance: InstanceId,
    path: Tokens,
    keptTokens: number,
    now: number,
    evictedAt = now,
  ): void {
    this.reportsEvictions.add(instance);
    const before = this.tree.usedTokens(instance);
    super.instanceEvicted(instance, path, keptTokens, now, evictedAt);
    this.countEviction(instance, before, now);
  }

  /**
   * What left the instance's cache in the tree since it held `before` tokens, for `displacement`
   * (a stale report clipped to nothing displaced nothing).
   */
  private countEviction(instance: InstanceId, before: number, now: number): void {
    if (this.options.displacement)
      this.displaced.recordEviction(instance, before - this.tree.usedTokens(instance), now);
  }

  /** A moved request (a migration) owes its new instance what it owed the old one. */
  protected override onMoved(id: string, from: InstanceId, to: InstanceId, _now: number): void {
    const f = this.flights.get(id);
    if (f === undefined || f.instance !== from) return;
    const source = this.stateFor(from);
    const target = this.stateFor(to);
    if (source.queue.delete(f)) {
      target.queue.add(f);
      if (f.started) {
        source.started--;
        target.started++;
      }
      source.queuedPrefill = Math.max(0, source.queuedPrefill - f.queuedPrefill);
      target.queuedPrefill += f.queuedPrefill;
    } else if (source.decoding.delete(f)) target.decoding.add(f);
    dropContext(source, f);
    target.contextSum += f.context;
    f.instance = to;
  }

  override requestStarted(id: string, now: number): void {
    const f = this.flights.get(id);
    if (f === undefined) return;
    if (!f.started && f.queuedPrefill >= 0) this.stateFor(f.instance).started++;
    f.started = true;
    f.startedAt = now;
  }

  override requestFirstToken(id: string, now: number): void {
    super.requestFirstToken(id, now);
    const f = this.flights.get(id);
    if (f === undefined || f.queuedPrefill < 0) return;
    this.prefillDone(f);
    this.stateFor(f.instance).decoding.add(f);
    f.decodingSince = now;
    f.queuedPrefill = -1;
  }

  protected override onReleased(
    id: string,
    instance: InstanceId,
    _now: number,
    counts: FinishCounts | undefined,
  ): void {
    const f = this.flights.get(id);
    if (f === undefined) return;
    this.flights.delete(id);
    // The flight's own instance: the one it was routed to and counted on.
    const state = this.stateFor(f.instance);
    if (f.queuedPrefill >= 0) this.prefillDone(f);
    else state.decoding.delete(f);
    dropContext(state, f);
    const e = f.entry;
    this.tree.releaseInflight(e.leaf, instance);
    if (!e.live) return;
    if (counts === undefined) {
      this.dropFromWindow(e);
      return;
    }
    e.outputTokens = counts.outputTokens;
    e.latency = Math.max(0, _now - e.time);
    e.model = state.model.name;
    if (!e.expired) this.countOutput(e, 1);
  }

  private prefillDone(f: Flight): void {
    const state = this.stateFor(f.instance);
    state.queue.delete(f);
    if (f.started) state.started--;
    state.queuedPrefill = state.queuedPrefill - f.queuedPrefill;
    // Float residue must not leave a phantom queue on an idle instance.
    if (state.queuedPrefill < 1e-9) state.queuedPrefill = 0;
  }

  private countOutput(e: WindowEntry, sign: 1 | -1): void {
    this.cluster.finished += sign;
    this.cluster.outputTokens += sign * e.outputTokens;
    this.finishedLatency = this.cluster.finished > 0 ? this.finishedLatency + sign * e.latency : 0;
    this.countModelLatency(e, sign);
    if (!this.options.perPrefixOutput) return;
    const kp = keyPortionOf(e.leaf);
    if (kp === null) return;
    let s = this.byPrefix.get(kp);
    if (s === undefined) {
      if (sign < 0) return;
      s = { finished: 0, outputTokens: 0 };
      this.byPrefix.set(kp, s);
    }
    s.finished += sign;
    s.outputTokens += sign * e.outputTokens;
    if (s.finished <= 0) this.byPrefix.delete(kp);
  }

  override instanceAdded(instance: InstanceId, info: InstanceInfo, now: number): void {
    super.instanceAdded(instance, info, now);
    this.stateFor(instance).model = info.costModel ?? this.options.costModel;
  }

  protected get treeCostModel(): CostModel {
    return this.options.costModel;
  }

  override instanceRemoved(instance: InstanceId, now: number): void {
    super.instanceRemoved(instance, now);
    for (const e of this.window.entries()) if (e.instance === instance && e.live) this.dropFromWindow(e);
    this.tree.removeInstanceCache(instance);
    this.reportsEvictions.delete(instance);
    this.displaced.forget(instance);
  }

  override tick(now: number): void {
    this.expireWindow(now);
  }

  private dropFromWindow(e: WindowEntry): void {
    e.live = false;
    if (e.expired) return;
    this.tree.releaseWindow(e.leaf, e.instance);
    const state = this.stateFor(e.instance);
    state.windowRequests = Math.max(0, state.windowRequests - 1);
    state.windowPrefill = state.windowRequests === 0 ? 0 : Math.max(0, state.windowPrefill - e.prefill);
    if (e.outputTokens >= 0) this.countOutput(e, -1);
  }

  private expireWindow(now: number): void {
    this.lastExpiry = now;
    this.window.expire(now, (e) => {
      if (!e.live) {
        e.expired = true;
        return;
      }
      this.dropFromWindow(e);
      e.live = true;
      e.expired = true;
    });
  }

  private stateFor(instance: InstanceId): InstanceState {
    let s = this.states[instance];
    if (s === undefined) {
      s = {
        queuedPrefill: 0,
        queue: new Set(),
        started: 0,
        decoding: new Set(),
        contextSum: 0,
        windowRequests: 0,
        windowPrefill: 0,
        model: this.options.costModel,
      };
      this.states[instance] = s;
    }
    return s;
  }
}

/** Take a flight that left the instance's queue or decoding set out of its context sum (exactly 0 once empty). */
function dropContext(state: InstanceState, f: Flight): void {
  state.contextSum = state.queue.size + state.decoding.size === 0 ? 0 : state.contextSum - f.context;
}

/** Seconds of one decode iteration on `model` for `batch` requests at `context` tokens each. */
function stepTime(model: CostModel, batch: number, context: number): number {
  if (batch <= 0) return 0;
  const seq = batch * (context + 1);
  return model.iterationTime({ requests: batch, newTokens: batch, seqTokens: seq, newTimesSeq: seq });
}
