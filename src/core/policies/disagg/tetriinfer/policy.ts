import { NoInstanceAvailableError } from '../../../cluster-view.ts';
import { Random } from '../../../random.ts';
import type { FleetRequest, InstanceId, RouteDecision, RouteRequest, Tokens } from '../../../types.ts';
import { withDefaults } from '../../../with-defaults.ts';
import { NO_COSTS } from '../../base-policy.ts';
import { DecodeAtKvReadyPolicy } from '../../support/decode-at-kv-ready.ts';
import { indexAfter } from '../../support/index-after.ts';
import { hasRoles, withRole } from '../../support/roles.ts';
import { type DecodeLoad, dispatchDecode } from './dispatch.ts';
import { FlipWatcher, type WatchedInstance } from './flip.ts';
import { checkTetriInferOptions, type TetriInferOptions, tetriInferDefaults } from './options.ts';

/** Predicted output tokens of a request (the length predictor's answer), undefined when none. */
export type OutputPredictor = (request: RouteRequest) => number | undefined;

/** The run's length predictor's guess (core/length; `preble sim --predictor`), carried on the request. */
export const requestPrediction: OutputPredictor = (request) => request.predictedOutputTokens;

interface Tracked {
  readonly promptTokens: number;
  /** Predicted output tokens (the default when the request had none). */
  readonly predicted: number;
  readonly heavy: boolean;
  prefill: InstanceId;
  /** Still counted in its prefill instance's queue (until its first token). */
  queued: boolean;
  decode?: InstanceId;
  /** KV it is predicted to need on its decode instance. */
  demand: number;
}

interface LiveLoad {
  demand: number;
  heavy: number;
  light: number;
}

const NO_REQUESTS: readonly FleetRequest[] = Object.freeze([]);

/**
 * TetriInfer (Hu et al., "Inference without Interference", seed 004; digest in
 * /work/shared/research/seed-aladdin-splitwise-tetriinfer.md), on a fleet of prefill and decode
 * instances. What each part is here, against the paper:
 * - Global scheduler (§3.2): a request goes to the prefill instance with the fewest queued prompt
 *   tokens (routed, not yet through their prefill: "the least load"); ties rotate.
 * - Prefill instance (§3.3): its engine runs prefill-only chunks of `chunkSize` tokens, merged in
 *   order, the last partial chunk padded to `chunkSize` (the padding costs compute: the engine's
 *   `padPrefillChunks`), and its queue (`tetriinfer` queue policy) sorts PrefillSchedBatch raw requests
 *   at a time, FCFS, SJF or LJF by prompt length. The length predictor is not run: the prediction
 *   comes with the request (`OutputPredictor`; TetriInfer's OPT-125M co-running cost, +10% prefill
 *   latency under stress, is not modelled).
 * - Dispatcher (§3.3.4), at KV-ready (`routeDecode`; the paper dispatches after the first chunk and
 *   transfers at the request level when all chunks are done, so the decision time differs only by the
 *   prompt's remaining chunks): decode instances split into α (room for the request's predicted KV,
 *   prompt + predicted output, on top of their requests' predicted KV) and β, two picked at random from
 *   α, and the one with the lower heavy:light ratio taken (`dispatch.ts`). The loads it reads are those
 *   of the last broadcast, refreshed every `loadBroadcastSeconds` (§3.2's cluster monitor), not fresh:
 *   dispatches between broadcasts do not see each other.
 * - Decode instance (§3.4): continuous batching on paged KV, admission `greedy` (vLLM), `reserve-static`
 *   or `reserve-dynamic` by the predicted length (the `tetriinfer` queue policy's adopt rule).
 * - Instance flip (§3.5): `flip.ts`, asked for through `fleetRequests` (role changes).
 * The router sees the run's length predictor's point estimate (`RouteRequest.predictedOutputTokens`,
 * a bucket's middle for `tetriinfer-G`; `defaultOutputTokens` without a predictor); the decode
 * admission counts from the predicted range's lower end, as the paper's (§5.2.3). A request is a heavy
 * decode past `heavyDecodeTokens`.
 */
export class TetriInferPolicy extends DecodeAtKvReadyPolicy {
  readonly name = 'tetriinfer';
  readonly branches = ['least-loaded-prefill'] as const;
  private readonly o: Required<TetriInferOptions>;
  private readonly random: Random;
  private readonly watcher: FlipWatcher;
  private readonly requests = new Map<string, Tracked>();
  private readonly promptQueue = new Map<InstanceId, number>();
  private readonly live = new Map<InstanceId, LiveLoad>();
  private broadcast = new Map<InstanceId, DecodeLoad>();
  private broadcastAt = Number.NEGATIVE_INFINITY;
  private lastPrefill: InstanceId = -1;

  constructor(
    options: TetriInferOptions = {},
    private readonly predict: OutputPredictor = requestPrediction,
  ) {
    super();
    this.o = withDefaults(tetriInferDefaults, options);
    checkTetriInferOptions(this.o);
    this.random = new Random(this.o.seed);
    this.watcher = new FlipWatcher(this.o.flipIdleSeconds, this.o.flipDelaySeconds);
  }

  /** Queued prompt tokens of a prefill instance, as the router counts them (tests). */
  promptQueueTokens(instance: InstanceId): number {
    return this.promptQueue.get(instance) ?? 0;
  }

  /** Whether an instance is draining for a flip (tests). */
  isFlipping(instance: InstanceId): boolean {
    return this.watcher.isFlipping(instance);
  }

  protected choose(request: RouteRequest, _now: number, active: readonly InstanceId[]): RouteDecision {
    const prefill = this.usable(active, 'prefill');
    if (prefill.length === 0) {
      throw new Error(
        hasRoles(this.view)
          ? 'tetriinfer: no active prefill instance to take the request'
          : 'tetriinfer: the fleet has no prefill and decode instances; tetriinfer needs a disaggregated fleet (e.g. --fleet 2P2D)',
      );
    }
    const start = indexAfter(prefill, this.lastPrefill);
    let best = prefill[start]!;
    for (let k = 1; k < prefill.length; k++) {
      const id = prefill[(start + k) % prefill.length]!;
      if (this.promptQueueTokens(id) < this.promptQueueTokens(best)) best = id;
    }
    this.lastPrefill = best;
    const predicted = Math.max(0, this.predict(request) ?? this.o.defaultOutputTokens);
    this.requests.set(request.id, {
      promptTokens: request.tokens.length,
      predicted,
      heavy: predicted > this.o.heavyDecodeTokens,
      prefill: best,
      queued: true,
      demand: 0,
    });
    this.promptQueue.set(best, this.promptQueueTokens(best) + request.tokens.length);
    return {
      instance: best,
      branch: 'least-loaded-prefill',
      matchedTokens: 0,
      costs: NO_COSTS,
      decode: 'at-kv-ready',
    };
  }

  override requestFirstToken(id: string, _now: number): void {
    this.unqueue(id);
  }

  protected chooseDecode(
    id: string,
    _prefillInstance: InstanceId,
    kvTokens: number,
    now: number,
  ): InstanceId {
    this.unqueue(id);
    let decode = this.usable(this.view.active, 'decode');
    if (decode.length === 0) decode = withRole(this.view, this.view.active, 'decode');
    if (decode.length === 0) throw new NoInstanceAvailableError();
    const r = this.requests.get(id);
    const predicted = r?.predicted ?? this.o.defaultOutputTokens;
    const heavy = r?.heavy ?? predicted > this.o.heavyDecodeTokens;
    const need = { tokens: kvTokens + predicted, heavy };
    const loads = this.loads(decode, now);
    const instance = dispatchDecode(loads, need, this.o.dispatch, this.random);
    if (r !== undefined) {
      r.decode = instance;
      r.demand = need.tokens;
      const l = this.liveLoad(instance);
      l.demand += need.tokens;
      if (heavy) l.heavy++;
      else l.light++;
    }
    this.moveRequest(id, instance, now);
    return instance;
  }

  kvReady(_id: string, _prefillInstance: InstanceId, _path: Tokens, _now: number): void {}

  kvArrived(_id: string, _decodeInstance: InstanceId, _path: Tokens, _now: number): void {}

  fleetRequests(now: number): readonly FleetRequest[] {
    if (this.o.flipIdleSeconds <= 0) return NO_REQUESTS;
    const watched: WatchedInstance[] = [];
    for (const id of this.view.active) {
      const role = this.view.state(id)?.info.role;
      if (role === 'prefill' || role === 'decode')
        watched.push({ instance: id, role, inflight: this.view.inflight(id) });
    }
    const out = this.watcher.observe(now, watched);
    return out.length === 0 ? NO_REQUESTS : out;
  }

  override instanceRemoved(instance: InstanceId, now: number): void {
    super.instanceRemoved(instance, now);
    this.watcher.forget(instance);
  }

  protected override onReleased(id: string): void {
    const r = this.requests.get(id);
    if (r === undefined) return;
    this.unqueue(id);
    if (r.decode !== undefined) {
      const l = this.liveLoad(r.decode);
      l.demand -= r.demand;
      if (r.heavy) l.heavy--;
      else l.light--;
    }
    this.requests.delete(id);
  }

  /** The decode loads of the last broadcast, broadcast again when the period has passed. */
  private loads(decode: readonly InstanceId[], now: number): DecodeLoad[] {
    if (now >= this.broadcastAt + this.o.loadBroadcastSeconds) {
      const next = new Map<InstanceId, DecodeLoad>();
      for (const [instance, l] of this.live) {
        next.set(instance, {
          instance,
          capacityTokens: 0,
          demandTokens: l.demand,
          heavy: l.heavy,
          light: l.light,
        });
      }
      this.broadcast = next;
      this.broadcastAt = now;
    }
    return decode.map((instance) => {
      const b = this.broadcast.get(instance);
      const capacityTokens = this.view.state(instance)?.info.kvCapacityTokens ?? Number.POSITIVE_INFINITY;
      return b === undefined
        ? { instance, capacityTokens, demandTokens: 0, heavy: 0, light: 0 }
        : { ...b, capacityTokens };
    });
  }

  private liveLoad(instance: InstanceId): LiveLoad {
    let l = this.live.get(instance);
    if (l === undefined) {
      l = { demand: 0, heavy: 0, light: 0 };
      this.live.set(instance, l);
    }
    return l;
  }

  private unqueue(id: string): void {
    const r = this.requests.get(id);
    if (r === undefined || !r.queued) return;
    r.queued = false;
    this.promptQueue.set(r.prefill, this.promptQueueTokens(r.prefill) - r.promptTokens);
  }

  /** Instances of `role` among `ids` that are not being flipped. */
  private usable(ids: readonly InstanceId[], role: 'prefill' | 'decode'): InstanceId[] {
    return withRole(this.view, ids, role).filter((id) => !this.watcher.isFlipping(id));
  }
}
