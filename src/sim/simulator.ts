import TinyQueue from 'tinyqueue';
import type { CostModel } from '../core/cost-model/types.ts';
import {
  kvArrival,
  type LinkPlacement,
  linkBetween,
  type TransferMode,
  tokensToMove,
} from '../core/fleet/kv-link.ts';
import { disaggregatedPolicyNames } from '../core/policies/registry.ts';
import type { GlobalPolicy, InstanceId, Role } from '../core/types.ts';
import { Engine, type EngineOptions } from '../engine/engine.ts';
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
  /** Seconds between the policy's background ticks. Default 1. */
  readonly tickInterval?: number;
  /** Tell the policy that cached prefixes serve one request at a time (llama.cpp slots; InstanceInfo). */
  readonly exclusivePrefixes?: boolean;
  /** Seconds between load-signal polls of every instance (SAL polls 10 times a second). Default 0.1. */
  readonly signalInterval?: number;
  /** Told after every iteration with the engine's state (tests, detailed metrics). */
  readonly onIteration?: (instance: InstanceId, iteration: Iteration, engine: Engine, now: number) => void;
  /** Told every `progressEvery` finished requests (progress bars live at the edge). */
  readonly onProgress?: (finished: number) => void;
  readonly progressEvery?: number;
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
  /** Each engine's counters at the end (preemptions, prompt and cached tokens, ...). */
  readonly engines: EngineSnapshot[];
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

/**
 * A discrete-event cluster simulation: N engines (src/engine) under one global policy, on a virtual
 * clock. The policy sees exactly the feedback a gateway gives it: requests starting, first tokens,
 * finishes with the engine's token counts, evictions, periodic ticks and polled load signals.
 * Deterministic: events at equal times run in the order they were scheduled.
 */
export function simulate(options: SimulatorOptions): SimResult {
  const { policy } = options;
  const tickInterval = options.tickInterval ?? 1;
  const signalInterval = options.signalInterval ?? 0.1;
  const fleet: readonly SimInstance[] =
    options.fleet ??
    Array.from({ length: options.instances }, () => ({
      costModel: options.costModel,
      role: 'mixed' as const,
    }));
  const disaggregated = fleet.some((instance) => instance.role !== 'mixed');
  if (disaggregated) {
    if (policy.routeDecode === undefined && policy.kvReady === undefined)
      throw new Error(colocatedOnDisaggregatedFleet(policy.name));
    if (options.kvTransfer === undefined)
      throw new Error(
        'a fleet with prefill and decode instances needs kvTransfer (its links and transfer mode)',
      );
  }
  const engines: Engine[] = [];
  for (const [i, instance] of fleet.entries()) {
    const role = instance.role === 'mixed' ? {} : { role: instance.role };
    engines.push(
      new Engine({ ...options.engine, ...instance.engine, costModel: instance.costModel, ...role }),
    );
    policy.instanceAdded(
      i,
      {
        kvCapacityTokens: engines[i]!.snapshot().kvCapacityTokens,
        ...(options.exclusivePrefixes === true ? { exclusivePrefixes: true } : {}),
        ...role,
      },
      0,
    );
  }
  const busy = new Array<number>(fleet.length).fill(0);
  const queue = new TinyQueue<SimEvent>([], (a, b) => a.time - b.time || a.seq - b.seq);
  const records: SimRecord[] = [];
  const byId = new Map<string, SimRecord>();
  let seq = 0;
  let events = 0;
  let iterations = 0;
  let inFlight = 0;
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
  // waiting for a pull, per decode instance, and the KV tokens in transit to each instance.
  const journeys = new Map<string, Journey>();
  const pulls: Journey[][] = fleet.map(() => []);
  const incoming = new Array<number>(fleet.length).fill(0);
  const transfer = options.kvTransfer;

  const finishRecord = (f: EngineFinish, end: number, cachedTokens: number) => {
    const r = byId.get(f.id);
    if (r !== undefined) {
      r.finish = end;
      r.cachedTokens = cachedTokens;
      r.outputTokens = f.outputTokens;
      byId.delete(f.id);
    }
    journeys.delete(f.id);
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
      link: linkBetween(transfer!.placement, prefill, decode),
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
      decode = policy.routeDecode(kv.id, prefill, kv.kvTokens, end);
    } else decode = j.decode;
    const role = fleet[decode]?.role;
    if (role !== 'decode' && role !== 'mixed')
      throw new Error(
        `policy ${policy.name} sent the decode of '${kv.id}' to instance ${decode}, ${role === undefined ? 'which does not exist' : `a ${role} instance`}`,
      );
    j.kv = kv;
    j.decodeInstance = decode;
    j.record.prefillEnd = end;
    j.record.decodeInstance = decode;
    if (j.mode === 'pull') {
      pulls[decode]!.push(j);
      tryPulls(decode, end);
    } else startTransfer(j, end);
  };

  /** The instance's runner: the policy's feedback, plus this run's records and counters. */
  const runnerFor = (instance: InstanceId): InstanceRunner => {
    const feedback = policyFeedback(policy, instance);
    const engine = engines[instance]!;
    if (fleet[instance]!.role === 'decode') return decodeRunner(instance, engine);
    return new InstanceRunner(engine, clock, {
      began(iteration, start) {
        iterations++;
        busy[instance]! += iteration.duration;
        // Queueing ends when the iteration that admits a request begins.
        for (const s of iteration.events.started) {
          const r = byId.get(s.id);
          if (r !== undefined && r.start < 0) r.start = start;
        }
        feedback.began(iteration, start);
      },
      ended(iteration, start, end) {
        options.onIteration?.(instance, iteration, engine, end);
        feedback.ended(iteration, start, end);
        for (const id of iteration.events.firstTokens) {
          const r = byId.get(id);
          if (r !== undefined && r.firstToken < 0) r.firstToken = end;
        }
        for (const f of iteration.events.finished) finishRecord(f, end, f.cachedTokens);
        for (const kv of iteration.events.kvReady) kvReady(instance, kv, end);
      },
    });
  };

  /**
   * A decode instance's runner: its admissions are adopted requests (their queueing ended at their
   * prefill, so the policy is told nothing, the record gets `decodeStart`); its finishes report the
   * prefill leg's cache hit (the decode engine counts the whole prompt as cached); its iteration
   * ends retry waiting pulls.
   */
  const decodeRunner = (instance: InstanceId, engine: Engine): InstanceRunner =>
    new InstanceRunner(engine, clock, {
      began(iteration, start) {
        iterations++;
        busy[instance]! += iteration.duration;
        for (const s of iteration.events.started) {
          const r = byId.get(s.id);
          if (r !== undefined && r.decodeStart < 0) r.decodeStart = start;
        }
      },
      ended(iteration, start, end) {
        options.onIteration?.(instance, iteration, engine, end);
        const ev = iteration.events;
        for (const e of ev.evictions) policy.instanceEvicted(instance, e.path, e.keptTokens, end, start);
        for (const f of ev.finished) {
          const cached = journeys.get(f.id)?.kv?.cachedTokens ?? f.cachedTokens;
          policy.requestFinished(f.id, end, { ...f, cachedTokens: cached });
          finishRecord(f, end, cached);
        }
        if (pulls[instance]!.length > 0) tryPulls(instance, end);
      },
    });
  const runners = engines.map((_, i) => runnerFor(i));

  const poll = (now: number) => {
    for (let i = 0; i < engines.length; i++) {
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

  while (queue.length > 0) {
    const e = queue.pop()!;
    events++;
    clockNow = e.time;
    switch (e.kind) {
      case 'arrival': {
        const r = e.request;
        pullArrival();
        // The policy sees what a gateway would: the prompt and the client's max_tokens, never the true output length.
        const d = policy.route(
          {
            id: r.id,
            tokens: r.tokens,
            arrival: r.arrival,
            ...(r.maxTokens === undefined ? {} : { outputLenHint: r.maxTokens }),
          },
          e.time,
        );
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
        const request: EngineRequest = {
          id: r.id,
          tokens: r.tokens,
          outputTokens: r.outputTokens,
          ...(r.maxTokens === undefined ? {} : { maxTokens: r.maxTokens }),
        };
        if (disaggregated && (d.decode !== undefined || fleet[d.instance]?.role !== 'mixed')) {
          const role = fleet[d.instance]?.role;
          if (d.decode === undefined) throw new Error(colocatedOnDisaggregatedFleet(policy.name));
          if (role !== 'prefill')
            throw new Error(
              `policy ${policy.name} sent the prefill of '${r.id}' to instance ${d.instance}, ${role === undefined ? 'which does not exist' : `a ${role} instance`}`,
            );
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
        // The KV is on the decode instance: it takes the request over, the prefill instance lets go.
        const j = e.journey;
        const kv = j.kv!;
        const decode = j.decodeInstance!;
        const prefill = j.record.instance;
        if (j.mode === 'pull') incoming[decode]! -= kv.kvTokens;
        j.record.transferEnd = e.time;
        engines[decode]!.adopt(j.request, { kvTokens: kv.kvTokens, generated: kv.generated }, e.time);
        engines[prefill]!.releaseKv(j.request.id);
        policy.kvArrived?.(j.request.id, decode, kv.path, e.time);
        runners[decode]!.kick();
        runners[prefill]!.kick();
        if (pulls[decode]!.length > 0) tryPulls(decode, e.time);
        break;
      }
      case 'tick':
        policy.tick(e.time);
        if (!sourceDone || inFlight > 0)
          queue.push({ time: e.time + tickInterval, seq: seq++, kind: 'tick' });
        break;
      case 'poll':
        poll(e.time);
        if (!sourceDone || inFlight > 0)
          queue.push({ time: e.time + signalInterval, seq: seq++, kind: 'poll' });
        break;
    }
  }
  if (inFlight !== 0) throw new Error(`simulation ended with ${inFlight} requests unfinished`);
  return {
    records,
    busySeconds: busy,
    durationSeconds: Math.max(0, lastFinish - start),
    events,
    iterations,
    engines: engines.map((e) => e.snapshot()),
  };
}
