import TinyQueue from 'tinyqueue';
import { NoInstanceAvailableError } from '../core/cluster-view.ts';
import type { CostModel } from '../core/cost-model/types.ts';
import {
  KV_LINK_CLASSES,
  kvArrival,
  type LinkPlacement,
  linkBetween,
  type TransferMode,
  tokensToMove,
} from '../core/fleet/kv-link.ts';
import type { LengthPredictor } from '../core/length/types.ts';
import { disaggregatedPolicyNames } from '../core/policies/registry.ts';
import type {
  FleetRequest,
  GlobalPolicy,
  InstanceId,
  Role,
  RouteDecision,
  RouteRequest,
} from '../core/types.ts';
import { Engine, type EngineOptions, type KvLeg } from '../engine/engine.ts';
import type {
  EngineFinish,
  EngineKvReady,
  EngineRequest,
  EngineSnapshot,
  Iteration,
} from '../engine/types.ts';
import { InstanceRunner, type RunnerClock } from '../runtime/instance-runner.ts';
import { policyFeedback } from '../runtime/policy-feedback.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import { type MigrationLogEntry, type MigrationSetup, Migrator } from './migration.ts';
import { SimPredictions } from './predictions.ts';
import type { SimRecord } from './record.ts';

/** One instance of a fleet that is not N copies of one engine (other hardware, other settings). */
export interface SimInstance {
  readonly costModel: CostModel;
  /**
   * `mixed` runs whole requests; `prefill` and `decode` instances run the two legs of a disaggregated
   * request (a policy whose decisions carry `decode`, with `SimulatorOptions.kvTransfer`).
   */
  readonly role: Role;
  /** This instance's engine settings; unset ones come from `SimulatorOptions.engine`. */
  readonly engine?: Omit<EngineOptions, 'costModel'>;
  /** KV bytes per token sent from here (default: the cost model's) and the model's layers (default 1). */
  readonly kvBytesPerToken?: number;
  readonly layers?: number;
}

/** How KV moves between a fleet's instances (core/fleet/kv-link.ts): which link, which mode. */
export interface KvTransferSetup {
  readonly placement: LinkPlacement;
  readonly mode: TransferMode;
}

/**
 * A change to the fleet at run time (docs/fleets.md, "Fleet actions"), at `at` seconds on the
 * simulator's clock: `add` builds an engine from `spec` (the next id); `drain`, `remove` and `role`
 * as the policy's `FleetRequest`s.
 */
export type FleetAction =
  | { readonly at: number; readonly action: 'add'; readonly spec: SimInstance }
  | (FleetRequest & { readonly at: number });

/** What happened to the fleet during a run, in order (`SimResult.fleetLog`). */
export interface FleetLogEntry {
  readonly at: number;
  readonly instance: InstanceId;
  /**
   * `added`; `draining` (no new work); `drained` (a draining instance became idle); `removed`; `role`
   * (the policy told of the new role; the engine runs it, or `mixed` until it can); `role-settled` (the
   * engine runs the new role).
   */
  readonly event: 'added' | 'draining' | 'drained' | 'removed' | 'role' | 'role-settled';
  readonly role?: Role;
  /** Who asked: a scheduled fleet action, the policy (`fleetRequests`) or a provisioner (`onTick`). */
  readonly by: FleetActor;
}

export type FleetActor = 'action' | 'policy' | 'provisioner';

/** What a provisioner's hook sees at a tick (src/sim/provisioning.ts): the instances and the arrivals since the last tick. */
export interface TickFleet {
  readonly instances: readonly {
    readonly id: InstanceId;
    readonly role: Role;
    readonly standing: 'active' | 'draining' | 'removed';
    /** Requests on the engine: running, waiting, adopted and waiting. */
    readonly inflight: number;
  }[];
  readonly arrivals: number;
}

/** The one line a colocated policy gets on a fleet with prefill and decode instances. */
export function colocatedOnDisaggregatedFleet(policy: string): string {
  return `policy ${policy} places requests colocated; a fleet with prefill and decode instances needs a disaggregated policy: ${disaggregatedPolicyNames.join(', ')}`;
}

export interface SimulatorOptions {
  readonly policy: GlobalPolicy;
  /** N identical instances of `costModel`, unless `fleet` is given. */
  readonly instances: number;
  readonly costModel: CostModel;
  /** The instances one by one (ids in order); overrides `instances` and `costModel`. */
  readonly fleet?: readonly SimInstance[];
  /** Engine settings shared by every instance (queue policy, chunk budget, ...). */
  readonly engine?: Omit<EngineOptions, 'costModel'>;
  /** The request stream, in arrival order; pulled lazily. */
  readonly requests: Iterable<WorkloadRequest>;
  /** The links and transfer mode of a fleet with prefill and decode instances (required with one). */
  readonly kvTransfer?: KvTransferSetup;
  /** Fleet changes at run time (add, drain, remove, role change), applied as events at their `at`. */
  readonly fleetActions?: readonly FleetAction[];
  /**
   * A provisioner (src/sim/provisioning.ts), asked at every tick after the policy's: the fleet actions
   * it returns are scheduled at their `at` (an add after its start-up delay), logged as by 'provisioner'.
   */
  readonly onTick?: (now: number, fleet: TickFleet) => readonly FleetAction[];
  /** Seconds between the policy's background ticks. Default 1. */
  readonly tickInterval?: number;
  /** Tell the policy that cached prefixes serve one request at a time (llama.cpp slots; InstanceInfo). */
  readonly exclusivePrefixes?: boolean;
  /** Seconds between load-signal polls of every instance (SAL polls 10 times a second). Default 0.1. */
  readonly signalInterval?: number;
  /** Live migrations a policy asks for (`GlobalPolicy.migrations`): link and rounds (src/sim/migration.ts). */
  readonly migration?: MigrationSetup;
  /** Told after every iteration with the engine's state (tests, detailed metrics). */
  readonly onIteration?: (instance: InstanceId, iteration: Iteration, engine: Engine, now: number) => void;
  /** Told every `progressEvery` finished requests (progress bars live at the edge). */
  readonly onProgress?: (finished: number) => void;
  readonly progressEvery?: number;
  /**
   * Predicts each request's output length at arrival, for the route request and the engines' queue
   * policies (src/sim/predictions.ts); absent, no request carries a prediction.
   */
  readonly predictor?: LengthPredictor;
}

export interface SimResult {
  /** One record per request, in arrival order. */
  readonly records: SimRecord[];
  /** Seconds each instance spent running iterations. */
  readonly busySeconds: number[];
  /** From the first arrival to the last finish. */
  readonly durationSeconds: number;
  /** Events processed (arrivals, iteration ends, ticks, polls). */
  readonly events: number;
  readonly iterations: number;
  /** Each engine's counters at the end (preemptions, prompt and cached tokens, ...), added ones too. */
  readonly engines: EngineSnapshot[];
  /** The fleet's changes (fleet actions and policy requests), in order; empty without any. */
  readonly fleetLog: FleetLogEntry[];
  /** Live migrations, step by step, in order: present when the policy asks for migrations. */
  readonly migrationLog?: MigrationLogEntry[];
  /**
   * Requests refused, never served: at arrival because no active instance could hold their prompt and
   * output in its KV (`refusedAtDoor`) or none the policy would pick among the larger ones after a
   * smaller one refused them (`tooSmall`), or after their prefill because no decode instance picked
   * when the KV was ready could (`refuseAtKvReady`); the policy is told `requestFailed` when it had
   * placed them. As a server refuses a request past its context length. Not in `records`.
   */
  readonly refused: RefusedRequest[];
  /**
   * Requests an instance refused as too long for its KV and a larger one then served: routed again at
   * arrival, or their decode picked again when the KV was ready (no second prefill).
   */
  readonly rerouted: number;
}

/** A request the simulator refused (`SimResult.refused`). */
export interface RefusedRequest {
  readonly id: string;
  readonly arrival: number;
  readonly promptTokens: number;
  readonly outputTokens: number;
  /**
   * The first instance the policy chose that refused it, too small for it (the larger ones it would
   * pick refused too, or there were none). Absent: no instance could hold it.
   */
  readonly instance?: InstanceId;
  /**
   * Its prefill ran here before `instance`, the first decode instance the policy picked when the KV
   * was ready (`'at-kv-ready'`), refused its decode. Absent: refused at arrival.
   */
  readonly prefilledOn?: InstanceId;
}

type SimEvent =
  | {
      readonly time: number;
      readonly seq: number;
      readonly kind: 'arrival';
      readonly request: WorkloadRequest;
    }
  | {
      readonly time: number;
      readonly seq: number;
      readonly kind: 'iteration-end';
      readonly runner: InstanceRunner;
    }
  | {
      readonly time: number;
      readonly seq: number;
      readonly kind: 'transfer-end';
      readonly journey: Journey;
    }
  | {
      readonly time: number;
      readonly seq: number;
      readonly kind: 'fleet';
      readonly action: FleetAction;
      readonly by?: FleetActor;
    }
  | { readonly time: number; readonly seq: number; readonly kind: 'migration'; readonly step: () => void }
  | { readonly time: number; readonly seq: number; readonly kind: 'tick' }
  | { readonly time: number; readonly seq: number; readonly kind: 'poll' };

/** A disaggregated request between its route and its finish. */
interface Journey {
  readonly request: EngineRequest;
  readonly record: SimRecord;
  readonly decode: InstanceId | 'at-kv-ready';
  /** How its KV moves: the decision's `transferMode`, else the fleet's. */
  readonly mode: TransferMode;
  /** Set at kvReady: the prefill leg's KV and the decode instance chosen for it. */
  kv?: EngineKvReady;
  decodeInstance?: InstanceId;
}

/** Where an instance stands in the fleet: `draining` takes no new work; `removed` left. */
type Standing = 'active' | 'draining' | 'removed';

/**
 * A discrete-event cluster simulation: N engines (src/engine) under one global policy, on a virtual
 * clock. The policy sees exactly the feedback a gateway gives it: requests starting, first tokens,
 * finishes with the engine's token counts, evictions, periodic ticks and polled load signals.
 * Deterministic: events at equal times run in the order they were scheduled.
 *
 * Fleet actions (`fleetActions`, and the policy's `fleetRequests`, taken after each route and each
 * event): `add` builds an engine from its spec with the next id and tells the policy
 * (`instanceAdded`); `drain` tells the policy (`instanceDrained`: the instance leaves `active`) and the
 * instance's in-flight work, decode legs already bound to it included, finishes there; `remove` drains,
 * and once the instance is idle (no work, no held KV, no KV bound for it) reports its cache's prefixes
 * as evictions (`instanceEvicted`) and tells `instanceRemoved`; `role` tells the policy at once
 * (`instanceRoleChanged`: new work of the new role goes there from now on) and the engine takes the role
 * when it holds nothing the role cannot run; until then it runs as `mixed`, which runs every leg, so
 * the work of the old role finishes where it is (a decode instance turned prefill finishes its decodes
 * while it starts prefills). An added instance sits on a node of its own (KV to it crosses the network).
 */
export function simulate(options: SimulatorOptions): SimResult {
  const { policy } = options;
  const tickInterval = options.tickInterval ?? 1;
  const signalInterval = options.signalInterval ?? 0.1;
  const fleet: SimInstance[] = [
    ...(options.fleet ??
      Array.from({ length: options.instances }, () => ({
        costModel: options.costModel,
        role: 'mixed' as const,
      }))),
  ];
  const initialCount = fleet.length;
  /** Each instance's role as the policy knows it (its engine may still run `mixed` on the way). */
  const roles: Role[] = fleet.map((instance) => instance.role);
  const standing: Standing[] = fleet.map(() => 'active');
  let disaggregated = false;
  const transfer = options.kvTransfer;
  /** A fleet with a prefill or decode instance needs a disaggregated policy and KV links. */
  const checkRole = (role: Role) => {
    if (role === 'mixed' || disaggregated) return;
    if (policy.routeDecode === undefined && policy.kvReady === undefined)
      throw new Error(colocatedOnDisaggregatedFleet(policy.name));
    if (transfer === undefined)
      throw new Error(
        'a fleet with prefill and decode instances needs kvTransfer (its links and transfer mode)',
      );
    disaggregated = true;
  };
  for (const role of roles) checkRole(role);
  // An added instance is on a node of its own: KV to or from it crosses the network.
  const placement: LinkPlacement | undefined =
    transfer === undefined
      ? undefined
      : {
          ...transfer.placement,
          nodeOf: (id) => (id < initialCount ? transfer.placement.nodeOf(id) : -1 - id),
        };
  const engines: Engine[] = [];
  const predictions = options.predictor === undefined ? undefined : new SimPredictions(options.predictor);
  const buildEngine = (instance: SimInstance, now: number): InstanceId => {
    const i = engines.length;
    const role = instance.role === 'mixed' ? {} : { role: instance.role };
    engines.push(
      new Engine({
        ...options.engine,
        ...instance.engine,
        costModel: instance.costModel,
        ...role,
        ...(predictions === undefined ? {} : { repredict: predictions.repredict }),
      }),
    );
    policy.instanceAdded(
      i,
      {
        kvCapacityTokens: engines[i]!.snapshot().kvCapacityTokens,
        costModel: instance.costModel,
        ...(options.exclusivePrefixes === true ? { exclusivePrefixes: true } : {}),
        ...role,
      },
      now,
    );
    return i;
  };
  for (const instance of fleet) buildEngine(instance, 0);
  const busy = new Array<number>(fleet.length).fill(0);
  const queue = new TinyQueue<SimEvent>([], (a, b) => a.time - b.time || a.seq - b.seq);
  const records: SimRecord[] = [];
  const refused: RefusedRequest[] = [];
  const byId = new Map<string, SimRecord>();
  const fleetLog: FleetLogEntry[] = [];
  let seq = 0;
  let events = 0;
  let iterations = 0;
  let inFlight = 0;
  let rerouted = 0;
  let finished = 0;
  let lastFinish = 0;
  const progressEvery = options.progressEvery ?? 1000;

  const source = options.requests[Symbol.iterator]();
  let sourceDone = false;
  const pullArrival = () => {
    const next = source.next();
    if (next.done) {
      sourceDone = true;
      return;
    }
    queue.push({ time: next.value.arrival, seq: seq++, kind: 'arrival', request: next.value });
  };

  // The virtual clock: the time of the event being handled.
  let clockNow = 0;
  const clock: RunnerClock = {
    now: () => clockNow,
    afterIteration(runner, start, duration) {
      queue.push({ time: start + duration, seq: seq++, kind: 'iteration-end', runner });
      return { cancel() {} };
    },
  };

  // Disaggregation (none of it runs for a colocated fleet): requests between route and finish, KV
  // waiting for a pull, per decode instance, the KV tokens in transit to each instance, and the
  // journeys whose decode leg is bound for each instance and not yet adopted there.
  const journeys = new Map<string, Journey>();
  const pulls: Journey[][] = fleet.map(() => []);
  const incoming = new Array<number>(fleet.length).fill(0);
  const bound = new Array<number>(fleet.length).fill(0);
  // Fleet actions: a role an engine takes once it can, and removals waiting for the instance to idle.
  const pendingRole: ({ role: Role; by: FleetActor } | undefined)[] = fleet.map(() => undefined);
  const pendingRemove: (FleetActor | undefined)[] = fleet.map(() => undefined);
  /** A draining instance became idle (logged once). */
  const drained: boolean[] = fleet.map(() => false);
  const drainedBy: (FleetActor | undefined)[] = fleet.map(() => undefined);
  let arrivalsSinceTick = 0;

  const finishRecord = (f: EngineFinish, end: number, cachedTokens: number) => {
    const r = byId.get(f.id);
    if (r !== undefined) {
      r.finish = end;
      r.cachedTokens = cachedTokens;
      r.outputTokens = f.outputTokens;
      byId.delete(f.id);
    }
    journeys.delete(f.id);
    predictions?.finished(f.id, f.outputTokens, end);
    if (migrator !== undefined) requestsInFlight.delete(f.id);
    inFlight--;
    finished++;
    lastFinish = end;
    if (finished % progressEvery === 0) options.onProgress?.(finished);
  };

  /**
   * The KV of `j` starts moving at `at` (KV ready, or the pull): its arrival is an event
   * (core/fleet/kv-link.ts's model). It moves the prompt less the prefix the decode engine caches at `at`.
   */
  const startTransfer = (j: Journey, at: number) => {
    const kv = j.kv!;
    const prefill = j.record.instance;
    const decode = j.decodeInstance!;
    const sender = fleet[prefill]!;
    const cachedOnDecode = engines[decode]!.cachedPrefixTokens(j.request.tokens);
    const kvBytesPerToken = sender.kvBytesPerToken ?? sender.costModel.kvBytesPerToken;
    const arrival = kvArrival({
      mode: j.mode,
      prefillEnd: j.record.prefillEnd,
      prefillSeconds: j.record.prefillEnd - j.record.start,
      kvTokens: kv.kvTokens,
      // Only what the decode instance lacks moves: the prompt prefix it caches now stays put (adopt
      // then pins it there and allocates the rest).
      cachedOnDecode,
      kvBytesPerToken,
      layers: sender.layers ?? 1,
      link: linkBetween(placement!, prefill, decode),
      pullAt: at,
    });
    // Layer-wise sends overlap the prefill: only the residue after it is the transfer's own time.
    j.record.transferStart = at;
    j.record.movedKvTokens = tokensToMove(kv.kvTokens, cachedOnDecode);
    j.record.movedKvBytes = j.record.movedKvTokens * kvBytesPerToken;
    queue.push({ time: arrival.availableAt, seq: seq++, kind: 'transfer-end', journey: j });
  };

  /**
   * `pull`: the decode instance fetches KV, in the order it became ready, while its free memory (the
   * snapshot's, less the KV already in transit to it) holds it, or when it is idle with nothing in
   * transit; otherwise the next try is at its next iteration end (or the next KV's readiness).
   */
  const tryPulls = (decode: InstanceId, now: number) => {
    const waiting = pulls[decode]!;
    while (waiting.length > 0) {
      const j = waiting[0]!;
      const s = engines[decode]!.snapshot();
      const idle = s.running === 0 && s.adoptWaiting === 0 && incoming[decode] === 0;
      if (!idle && s.freeKvTokens - incoming[decode]! < j.kv!.kvTokens + 1) break;
      waiting.shift();
      incoming[decode]! += j.kv!.kvTokens;
      startTransfer(j, now);
    }
  };

  /**
   * True when no active instance could ever hold `request`: neither a mixed one whole, nor a prefill
   * one its prompt with a decode (or mixed) one to take it over. Such a request would stall every
   * engine forever; a server refuses it at the door (context length exceeded), and so does this.
   */
  const refusedAtDoor = (request: EngineRequest, now: number): boolean => {
    const active = (role: Role) => engines.filter((_, i) => standing[i] === 'active' && roles[i] === role);
    const mixed = active('mixed');
    const prefill = active('prefill');
    const decode = [...active('decode'), ...mixed];
    // No instance to take it at all: not a question of size (routing says what is wrong).
    if (mixed.length === 0 && (prefill.length === 0 || decode.length === 0)) return false;
    const any = (list: Engine[], leg: KvLeg) => list.some((e) => holds(e, request, leg, now));
    return !(any(mixed, 'whole') || (any(prefill, 'prefill') && any(decode, 'decode')));
  };

  /** Whether `engine` could ever hold `leg` of `request` in its KV. */
  const holds = (engine: Engine, request: EngineRequest, leg: KvLeg, now: number): boolean =>
    engine.kvNeed(request, now, leg) <= engine.kvCapacityTokens;

  /** Decision `d` runs the request in two legs: its prefill on `d.instance`, its decode elsewhere. */
  const splitsLegs = (d: RouteDecision): boolean =>
    disaggregated && (d.decode !== undefined || roles[d.instance] !== 'mixed');

  /**
   * The instance of decision `d` too small for `request` (in a fleet of mixed KV sizes a policy may
   * choose one), or undefined: the prefill instance for its prompt, the decode instance named at
   * arrival for its decode, the one instance for a colocated request. Placements the checks below
   * refuse (an instance removed, draining or of the wrong role) are left to them.
   */
  const tooSmall = (
    d: RouteDecision,
    split: boolean,
    request: EngineRequest,
    now: number,
  ): InstanceId | undefined => {
    const short = (i: InstanceId, leg: KvLeg) =>
      standing[i] === 'active' && !holds(engines[i]!, request, leg, now);
    if (!split) return short(d.instance, 'whole') ? d.instance : undefined;
    if (roles[d.instance] !== 'decode' && short(d.instance, 'prefill')) return d.instance;
    if (typeof d.decode === 'number' && roles[d.decode] !== 'prefill' && short(d.decode, 'decode'))
      return d.decode;
    return undefined;
  };

  /**
   * An instance refused a request as too long for its KV: it, and every active instance of its role no
   * larger, join `avoid` (each would refuse it too), so the policy's next pick is a larger one, as the
   * gateway retries a replica's context-length 400 (docs/gateway.md, "Forward").
   */
  const avoidNoLarger = (small: InstanceId, avoid: InstanceId[]) => {
    const limit = engines[small]!.kvCapacityTokens;
    for (let i = 0; i < engines.length; i++)
      if (roles[i] === roles[small] && engines[i]!.kvCapacityTokens <= limit && !avoid.includes(i))
        avoid.push(i);
  };

  /** A policy that picks an instance it was told to avoid would be asked again forever. */
  const ignoredAvoid = (id: string, instance: InstanceId) =>
    `policy ${policy.name} sent '${id}' again to instance ${instance}, too small for it, which it was asked to avoid`;

  /** The policy placed a leg of `id` on `instance`, which must be present and have `roleWanted`. */
  const checkPlacement = (leg: 'prefill' | 'decode', id: string, instance: InstanceId, ok: boolean) => {
    const role = roles[instance];
    const off = role === undefined || standing[instance] === 'removed' || !ok;
    if (off)
      throw new Error(
        `policy ${policy.name} sent the ${leg} of '${id}' to instance ${instance}, ${role === undefined ? 'which does not exist' : standing[instance] === 'removed' ? 'which was removed' : `a ${role} instance`}`,
      );
  };

  /**
   * No decode instance picked when the KV was ready could hold the request's decode (a fleet of mixed
   * KV sizes; each refused it, as a decode server answers 400, after the prefill ran). The prefill
   * instance lets the KV go (the prompt stays in its cache), the policy is told `requestFailed`, and the
   * request leaves the records for `refused`, like one no instance chosen at arrival could hold.
   */
  const refuseAtKvReady = (j: Journey, prefill: InstanceId, decode: InstanceId, end: number) => {
    const id = j.request.id;
    engines[prefill]!.releaseKv(id);
    journeys.delete(id);
    byId.delete(id);
    records.splice(records.indexOf(j.record), 1);
    predictions?.forget(id);
    if (migrator !== undefined) requestsInFlight.delete(id);
    inFlight--;
    policy.requestFailed(id, end);
    refused.push({
      id,
      arrival: j.record.arrival,
      promptTokens: j.record.promptTokens,
      outputTokens: j.record.outputTokens,
      instance: decode,
      prefilledOn: prefill,
    });
    // Called at the end of the prefill instance's iteration: its runner goes on and settles after it.
  };

  /** A prefill leg ended on `prefill`: tell the policy, pick the decode instance, move the KV. */
  const kvReady = (prefill: InstanceId, kv: EngineKvReady, end: number) => {
    const j = journeys.get(kv.id)!;
    policy.kvReady?.(kv.id, prefill, kv.path, end);
    let decode: InstanceId;
    if (j.decode === 'at-kv-ready') {
      if (policy.routeDecode === undefined)
        throw new Error(
          `policy ${policy.name} routed '${kv.id}' with decode 'at-kv-ready' but has no routeDecode`,
        );
      // A decode instance too small for the request refuses it before pulling the KV; the policy picks
      // again among the larger ones (the same KV, no second prefill), as the gateway does.
      const avoid: InstanceId[] = [];
      let refusedBy: InstanceId | undefined;
      for (;;) {
        let pick: InstanceId;
        try {
          pick = policy.routeDecode(
            kv.id,
            prefill,
            kv.kvTokens,
            end,
            ...(refusedBy === undefined ? [] : [avoid]),
          );
        } catch (error) {
          if (refusedBy === undefined || !(error instanceof NoInstanceAvailableError)) throw error;
          refuseAtKvReady(j, prefill, refusedBy, end);
          return;
        }
        checkPlacement('decode', kv.id, pick, roles[pick] === 'decode' || roles[pick] === 'mixed');
        if (holds(engines[pick]!, j.request, 'decode', end)) {
          decode = pick;
          if (refusedBy !== undefined) rerouted++;
          break;
        }
        if (avoid.includes(pick)) throw new Error(ignoredAvoid(kv.id, pick));
        refusedBy ??= pick;
        avoidNoLarger(pick, avoid);
      }
      bound[decode]!++;
    } else decode = j.decode;
    j.kv = kv;
    j.decodeInstance = decode;
    j.record.prefillEnd = end;
    j.record.decodeInstance = decode;
    if (j.mode === 'pull') {
      pulls[decode]!.push(j);
      tryPulls(decode, end);
    } else startTransfer(j, end);
  };

  /** The request's decode leg runs on `instance` (adopted there): its events are the decode side's. */
  const adoptedHere = (id: string, instance: InstanceId): Journey | undefined => {
    const j = journeys.get(id);
    return j !== undefined && j.decodeInstance === instance && j.record.transferEnd >= 0 ? j : undefined;
  };

  /**
   * The instance's runner: the policy's feedback (policyFeedback, as a gateway gives it), plus this
   * run's records and counters. An adopted request's admission sets its `decodeStart` and is no
   * `requestStarted` (its queueing ended at its prefill); its finish reports the prefill leg's cache
   * hit (the decode engine counts the whole prompt as cached). Iteration ends retry waiting pulls and
   * settle pending fleet actions.
   */
  const runnerFor = (instance: InstanceId): InstanceRunner => {
    const feedback = policyFeedback(policy, instance);
    const engine = engines[instance]!;
    return new InstanceRunner(engine, clock, {
      began(iteration, start) {
        iterations++;
        busy[instance]! += iteration.duration;
        let adopted = 0;
        // Queueing ends when the iteration that admits a request begins.
        for (const s of iteration.events.started) {
          const r = byId.get(s.id);
          if (journeys.size > 0 && adoptedHere(s.id, instance) !== undefined) {
            adopted++;
            if (r !== undefined && r.decodeStart < 0) r.decodeStart = start;
          } else if (r !== undefined && r.start < 0) r.start = start;
        }
        if (adopted === 0) feedback.began(iteration, start);
        else {
          const started = iteration.events.started.filter((s) => adoptedHere(s.id, instance) === undefined);
          feedback.began({ ...iteration, events: { ...iteration.events, started } }, start);
        }
      },
      ended(iteration, start, end) {
        options.onIteration?.(instance, iteration, engine, end);
        let ev = iteration.events;
        if (journeys.size > 0 && ev.finished.some((f) => adoptedHere(f.id, instance) !== undefined)) {
          const finished = ev.finished.map((f) => {
            const kv = adoptedHere(f.id, instance)?.kv;
            return kv === undefined ? f : { ...f, cachedTokens: kv.cachedTokens };
          });
          ev = { ...ev, finished };
          feedback.ended({ ...iteration, events: ev }, start, end);
        } else feedback.ended(iteration, start, end);
        for (const id of ev.firstTokens) {
          const r = byId.get(id);
          if (r !== undefined && r.firstToken < 0) r.firstToken = end;
        }
        for (const f of ev.finished) finishRecord(f, end, f.cachedTokens);
        for (const kv of ev.kvReady) kvReady(instance, kv, end);
        if (pulls[instance]!.length > 0) tryPulls(instance, end);
        settle(instance, end);
      },
    });
  };
  const runners = engines.map((_, i) => runnerFor(i));

  // Live migrations (a policy with `migrations`): rounds on the KV link model, as events.
  const requestsInFlight = new Map<string, EngineRequest>();
  const migrator =
    policy.migrations === undefined
      ? undefined
      : new Migrator(
          {
            engines,
            policy,
            request: (id) => requestsInFlight.get(id),
            canReceive: (to) =>
              standing[to] === 'active' && (roles[to] === 'mixed' || roles[to] === 'decode'),
            link: (from, to) =>
              (placement === undefined ? null : linkBetween(placement, from, to)) ??
              options.migration?.link ??
              KV_LINK_CLASSES['infiniband-200'],
            kvBytesPerToken: (from) => fleet[from]!.kvBytesPerToken ?? fleet[from]!.costModel.kvBytesPerToken,
            at: (time, step) => queue.push({ time, seq: seq++, kind: 'migration', step }),
            kick: (i) => runners[i]!.kick(),
            evicted: (i, evictions, now) => {
              for (const e of evictions) policy.instanceEvicted(i, e.path, e.keptTokens, now);
            },
            requeued: (id, to) => {
              // It never ran where it was routed: it is `to`'s request.
              const r = byId.get(id);
              if (r !== undefined) r.instance = to;
            },
          },
          options.migration,
        );

  /** The engine holds no work and no KV, and no KV is bound for it. */
  const idle = (i: InstanceId): boolean => {
    const s = engines[i]!.snapshot();
    return (
      !runners[i]!.busy &&
      s.running + s.waiting + s.adoptWaiting + s.heldRequests === 0 &&
      bound[i] === 0 &&
      pulls[i]!.length === 0
    );
  };

  /** The engine of `i` can run `role` alone: nothing of another role on it, and no KV bound for a prefill one. */
  const canSettle = (i: InstanceId, role: Role): boolean =>
    engines[i]!.canTakeRole(role) && (role !== 'prefill' || bound[i] === 0);

  /** Pending fleet actions on `i` that its state now allows: a role the engine can take, a removal. */
  const settle = (i: InstanceId, now: number) => {
    const pending = pendingRole[i];
    if (pending !== undefined && canSettle(i, pending.role)) {
      engines[i]!.setRole(pending.role);
      pendingRole[i] = undefined;
      fleetLog.push({ at: now, instance: i, event: 'role-settled', role: pending.role, by: pending.by });
    }
    if (standing[i] !== 'draining' || !idle(i)) return;
    if (!drained[i]) {
      drained[i] = true;
      fleetLog.push({ at: now, instance: i, event: 'drained', by: drainedBy[i]! });
    }
    const by = pendingRemove[i];
    if (by === undefined) return;
    pendingRemove[i] = undefined;
    for (const e of engines[i]!.evictAll()) policy.instanceEvicted(i, e.path, e.keptTokens, now);
    policy.instanceRemoved(i, now);
    runners[i]!.stop();
    standing[i] = 'removed';
    fleetLog.push({ at: now, instance: i, event: 'removed', by });
  };

  /** A fleet action or a policy's request, at `now`. */
  const applyFleet = (a: FleetAction | FleetRequest, now: number, by: FleetActor) => {
    if (a.action === 'add') {
      checkRole(a.spec.role);
      fleet.push(a.spec);
      roles.push(a.spec.role);
      standing.push('active');
      busy.push(0);
      pulls.push([]);
      incoming.push(0);
      bound.push(0);
      pendingRole.push(undefined);
      pendingRemove.push(undefined);
      drained.push(false);
      drainedBy.push(undefined);
      const i = buildEngine(a.spec, now);
      runners.push(runnerFor(i));
      fleetLog.push({ at: now, instance: i, event: 'added', role: a.spec.role, by });
      return;
    }
    const i = a.instance;
    if (standing[i] === undefined || standing[i] === 'removed')
      throw new Error(
        `fleet ${a.action} of instance ${i}: ${standing[i] === undefined ? 'no such instance' : 'it was removed'}`,
      );
    if (a.action === 'role') {
      checkRole(a.role);
      roles[i] = a.role;
      const engine = engines[i]!;
      const settled = canSettle(i, a.role);
      // Until the engine can run the new role alone it runs as mixed, which runs both legs.
      engine.setRole(settled ? a.role : 'mixed');
      pendingRole[i] = settled ? undefined : { role: a.role, by };
      policy.instanceRoleChanged?.(i, a.role, now);
      fleetLog.push({ at: now, instance: i, event: 'role', role: a.role, by });
      if (settled) fleetLog.push({ at: now, instance: i, event: 'role-settled', role: a.role, by });
      return;
    }
    if (standing[i] === 'active') {
      standing[i] = 'draining';
      drainedBy[i] = by;
      policy.instanceDrained(i, now);
      fleetLog.push({ at: now, instance: i, event: 'draining', by });
    }
    if (a.action === 'remove') pendingRemove[i] = by;
    settle(i, now);
  };

  /** The policy's fleet requests, applied at once. */
  const takeFleetRequests = (now: number) => {
    const asked = policy.fleetRequests?.(now);
    if (asked !== undefined) for (const a of asked) applyFleet(a, now, 'policy');
  };

  const poll = (now: number) => {
    for (let i = 0; i < engines.length; i++) {
      if (standing[i] === 'removed') continue;
      const s = engines[i]!.snapshot();
      policy.loadSignal(
        i,
        {
          running: s.running,
          waiting: s.waiting,
          queuedPrefillTokens: s.queuedPrefillTokens,
          usedKvTokens: s.usedKvTokens,
          freeKvTokens: s.freeKvTokens,
        },
        now,
      );
    }
  };

  pullArrival();
  const first = queue.peek();
  const start = first?.time ?? 0;
  queue.push({ time: start + tickInterval, seq: seq++, kind: 'tick' });
  queue.push({ time: start + signalInterval, seq: seq++, kind: 'poll' });
  for (const action of options.fleetActions ?? [])
    queue.push({ time: action.at, seq: seq++, kind: 'fleet', action });

  while (queue.length > 0) {
    const e = queue.pop()!;
    events++;
    clockNow = e.time;
    switch (e.kind) {
      case 'arrival': {
        const r = e.request;
        arrivalsSinceTick++;
        pullArrival();
        const whole: EngineRequest = {
          id: r.id,
          tokens: r.tokens,
          outputTokens: r.outputTokens,
          ...(r.maxTokens === undefined ? {} : { maxTokens: r.maxTokens }),
        };
        if (refusedAtDoor(whole, e.time)) {
          refused.push({
            id: r.id,
            arrival: r.arrival,
            promptTokens: r.tokens.length,
            outputTokens: r.outputTokens,
          });
          break;
        }
        const prediction = predictions?.predict(r, e.time);
        // The policy sees what a gateway would: the prompt and the client's max_tokens, never the true
        // output length (a predictor's guess, when one runs).
        const routeRequest: RouteRequest = {
          id: r.id,
          tokens: r.tokens,
          arrival: r.arrival,
          ...(r.maxTokens === undefined ? {} : { outputLenHint: r.maxTokens }),
          ...(prediction === undefined ? {} : { predictedOutputTokens: prediction.tokens }),
        };
        // An instance too small for it refuses it, as a replica answers 400 past its context length:
        // the policy is told it failed and routes it again among the larger ones, as the gateway does.
        const avoid: InstanceId[] = [];
        let refusedBy: InstanceId | undefined;
        let d: RouteDecision | undefined;
        let split = false;
        for (;;) {
          try {
            d = policy.route(refusedBy === undefined ? routeRequest : { ...routeRequest, avoid }, e.time);
          } catch (error) {
            if (refusedBy === undefined || !(error instanceof NoInstanceAvailableError)) throw error;
            d = undefined;
            break;
          }
          // A policy may borrow an instance for this very request (Splitwise's mixed pool).
          takeFleetRequests(e.time);
          split = splitsLegs(d);
          const small = tooSmall(d, split, whole, e.time);
          if (small === undefined) break;
          if (avoid.includes(small)) throw new Error(ignoredAvoid(r.id, small));
          policy.requestFailed(r.id, e.time);
          refusedBy ??= small;
          avoidNoLarger(small, avoid);
        }
        if (d === undefined) {
          // Every instance the policy could pick was too small: the request is refused, the run goes on.
          predictions?.forget(r.id);
          refused.push({
            id: r.id,
            arrival: r.arrival,
            promptTokens: r.tokens.length,
            outputTokens: r.outputTokens,
            instance: refusedBy!,
          });
          break;
        }
        if (refusedBy !== undefined) rerouted++;
        const record: SimRecord = {
          id: r.id,
          workload: r.workload,
          instance: d.instance,
          branch: d.branch,
          arrival: r.arrival,
          dispatch: e.time,
          start: -1,
          firstToken: -1,
          finish: -1,
          promptTokens: r.tokens.length,
          predictedCachedTokens: d.matchedTokens,
          cachedTokens: 0,
          outputTokens: r.outputTokens,
          decodeInstance: -1,
          prefillEnd: -1,
          transferStart: -1,
          transferEnd: -1,
          decodeStart: -1,
          movedKvTokens: -1,
          movedKvBytes: -1,
        };
        records.push(record);
        byId.set(r.id, record);
        inFlight++;
        const request: EngineRequest = prediction === undefined ? whole : { ...whole, prediction };
        if (migrator !== undefined) requestsInFlight.set(r.id, request);
        if (standing[d.instance] !== 'active' && standing[d.instance] !== undefined)
          throw new Error(
            `policy ${policy.name} routed '${r.id}' to instance ${d.instance}, which is ${standing[d.instance] === 'removed' ? 'removed' : 'draining'}`,
          );
        if (split) {
          if (d.decode === undefined) throw new Error(colocatedOnDisaggregatedFleet(policy.name));
          checkPlacement('prefill', r.id, d.instance, roles[d.instance] === 'prefill');
          if (d.decode !== 'at-kv-ready') {
            checkPlacement(
              'decode',
              r.id,
              d.decode,
              roles[d.decode] === 'decode' || roles[d.decode] === 'mixed',
            );
            bound[d.decode]!++;
          }
          journeys.set(r.id, { request, record, decode: d.decode, mode: d.transferMode ?? transfer!.mode });
          engines[d.instance]!.submit(request, e.time, { stopAfterPrefill: true });
        } else engines[d.instance]!.submit(request, e.time);
        runners[d.instance]!.kick();
        break;
      }
      case 'iteration-end':
        e.runner.finishIteration(e.time);
        break;
      case 'transfer-end': {
        // The KV is on the decode instance: the prefill instance lets go, the decode instance takes the
        // request over.
        const j = e.journey;
        const kv = j.kv!;
        const decode = j.decodeInstance!;
        const prefill = j.record.instance;
        if (j.mode === 'pull') incoming[decode]! -= kv.kvTokens;
        j.record.transferEnd = e.time;
        engines[prefill]!.releaseKv(j.request.id);
        engines[decode]!.adopt(j.request, { kvTokens: kv.kvTokens, generated: kv.generated }, e.time);
        bound[decode]!--;
        policy.kvArrived?.(j.request.id, decode, kv.path, e.time);
        runners[decode]!.kick();
        runners[prefill]!.kick();
        if (pulls[decode]!.length > 0) tryPulls(decode, e.time);
        settle(prefill, e.time);
        break;
      }
      case 'fleet':
        applyFleet(e.action, e.time, e.by ?? 'action');
        break;
      case 'migration':
        e.step();
        break;
      case 'tick':
        policy.tick(e.time);
        if (options.onTick !== undefined) {
          const instances = engines.map((engine, id) => {
            const s = engine.snapshot();
            return {
              id,
              role: roles[id]!,
              standing: standing[id]!,
              inflight: s.running + s.waiting + s.adoptWaiting,
            };
          });
          const asked = options.onTick(e.time, { instances, arrivals: arrivalsSinceTick });
          arrivalsSinceTick = 0;
          for (const action of asked)
            queue.push({
              time: Math.max(action.at, e.time),
              seq: seq++,
              kind: 'fleet',
              action,
              by: 'provisioner',
            });
        }
        if (!sourceDone || inFlight > 0)
          queue.push({ time: e.time + tickInterval, seq: seq++, kind: 'tick' });
        break;
      case 'poll':
        poll(e.time);
        if (!sourceDone || inFlight > 0)
          queue.push({ time: e.time + signalInterval, seq: seq++, kind: 'poll' });
        break;
    }
    takeFleetRequests(e.time);
    migrator?.take(e.time);
  }
  if (inFlight !== 0) throw new Error(`simulation ended with ${inFlight} requests unfinished`);
  return {
    records,
    busySeconds: busy,
    durationSeconds: Math.max(0, lastFinish - start),
    events,
    iterations,
    engines: engines.map((e) => e.snapshot()),
    fleetLog,
    ...(migrator === undefined ? {} : { migrationLog: migrator.log }),
    refused,
    rerouted,
  };
}
