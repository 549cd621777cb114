import TinyQueue from 'tinyqueue';
import type { CostModel } from '../core/cost-model/types.ts';
import type { GlobalPolicy, InstanceId, Role } from '../core/types.ts';
import { Engine, type EngineOptions } from '../engine/engine.ts';
import type { EngineSnapshot, Iteration } from '../engine/types.ts';
import { InstanceRunner, type RunnerClock } from '../runtime/instance-runner.ts';
import { policyFeedback } from '../runtime/policy-feedback.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import type { SimRecord } from './record.ts';

/** One instance of a fleet that is not N copies of one engine (other hardware, other settings). */
export interface SimInstance {
  readonly costModel: CostModel;
  /** Only `mixed` runs here so far: prefill and decode roles need the disaggregated path (issue 10). */
  readonly role: Role;
  /** This instance's engine settings; unset ones come from `SimulatorOptions.engine`. */
  readonly engine?: Omit<EngineOptions, 'costModel'>;
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
  | { readonly time: number; readonly seq: number; readonly kind: 'tick' }
  | { readonly time: number; readonly seq: number; readonly kind: 'poll' };

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
  const engines: Engine[] = [];
  for (const [i, instance] of fleet.entries()) {
    if (instance.role !== 'mixed') {
      throw new Error(
        `instance ${i} is a ${instance.role} instance: the simulator runs mixed (colocated) instances only so far; disaggregated prefill/decode comes with the disaggregated policies`,
      );
    }
    engines.push(new Engine({ ...options.engine, ...instance.engine, costModel: instance.costModel }));
    policy.instanceAdded(
      i,
      {
        kvCapacityTokens: engines[i]!.snapshot().kvCapacityTokens,
        ...(options.exclusivePrefixes === true ? { exclusivePrefixes: true } : {}),
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

  /** The instance's runner: the policy's feedback, plus this run's records and counters. */
  const runnerFor = (instance: InstanceId): InstanceRunner => {
    const feedback = policyFeedback(policy, instance);
    const engine = engines[instance]!;
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
        for (const f of iteration.events.finished) {
          const r = byId.get(f.id);
          if (r !== undefined) {
            r.finish = end;
            r.cachedTokens = f.cachedTokens;
            r.outputTokens = f.outputTokens;
            byId.delete(f.id);
          }
          inFlight--;
          finished++;
          lastFinish = end;
          if (finished % progressEvery === 0) options.onProgress?.(finished);
        }
      },
    });
  };
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
        };
        records.push(record);
        byId.set(r.id, record);
        inFlight++;
        engines[d.instance]!.submit(
          {
            id: r.id,
            tokens: r.tokens,
            outputTokens: r.outputTokens,
            ...(r.maxTokens === undefined ? {} : { maxTokens: r.maxTokens }),
          },
          e.time,
        );
        runners[d.instance]!.kick();
        break;
      }
      case 'iteration-end':
        e.runner.finishIteration(e.time);
        break;
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
