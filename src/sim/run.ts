import type { InstanceCostModel } from '../core/cost-model/instance.ts';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { fleetCostPerHour, fleetGpuCount } from '../core/fleet/cost.ts';
import type { Fleet, FleetInstance } from '../core/fleet/fleet.ts';
import { createLengthPredictor } from '../core/length/registry.ts';
import { createGlobalPolicy, policyEntry, resolvePolicyOptions } from '../core/policies/registry.ts';
import { createProvisioner, type ProvisionerChoice } from '../core/provisioning/registry.ts';
import type { QueuePolicyName, QueuePolicyOptions } from '../core/replica-queue/registry.ts';
import type { Role } from '../core/types.ts';
import { defaultChunkedPrefillTokens } from '../engine/options.ts';
import type { EngineSnapshot } from '../engine/types.ts';
import { percentiles } from '../report/stats.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import { perInstance, summarize } from './metrics/summary.ts';
import type { MigrationLogEntry } from './migration.ts';
import {
  type ProvisioningFigures,
  type ProvisioningSetup,
  provisioningFigures,
  provisioningHook,
} from './provisioning.ts';
import { journeyMarks, type SimRecord } from './record.ts';
import {
  type FleetAction,
  type FleetLogEntry,
  type KvTransferSetup,
  type SimInstance,
  type SimResult,
  type SimulatorOptions,
  simulate,
} from './simulator.ts';

/** One simulation: which policy, on which cluster, under which stream. */
export interface SimSpec {
  readonly policy: string;
  /** Label for the report ('toolbench', 'azure:conv.csv', ...). */
  readonly workload: string;
  readonly instances: number;
  readonly rps: number;
  readonly costModel: InstanceCostModel;
  /**
   * Instances one by one (`--fleet`), overriding `instances` and `costModel`: each built from its own
   * preset (with `kvCapacityTokens` when given), its own engine settings over the run's.
   */
  readonly fleet?: readonly FleetInstance[];
  /** A fleet with prefill and decode instances: its links and transfer mode (the `Fleet` itself does). */
  readonly kvTransfer?: KvTransferSetup;
  readonly kvCapacityTokens?: number;
  /**
   * Fleet changes at run time (docs/fleets.md, "Fleet actions"): `add` takes an instance spec as
   * `--fleet` gives them; the others as the simulator's `FleetAction`.
   */
  readonly fleetActions?: readonly SimFleetAction[];
  /**
   * A provisioner sizing the fleet at run time (docs/provisioning.md): its adds build an instance like
   * the fleet's first of that role (or the run's preset) and serve `startupSeconds` after the decision.
   */
  readonly provisioner?: { readonly choice: ProvisionerChoice; readonly startupSeconds: number };
  /** A fresh copy of the request stream (every policy must see the identical one). */
  readonly requests: () => Iterable<WorkloadRequest>;
  readonly seed: number;
  /**
   * The engines' waiting-queue policy. 'auto' = SGLang's lpm for every colocated global policy, so
   * that runs compare global policies alone (Preble's priority groups are a step of the ablation);
   * a disaggregated policy's own (the registry's `engineQueuePolicy`: fcfs for distserve).
   */
  readonly queuePolicy?: QueuePolicyName | 'auto';
  /** Queue-policy options over the policy's (`--queue-policy-option`; each queue policy reads its own). */
  readonly queuePolicyOptions?: QueuePolicyOptions;
  /** Chunked-prefill token budget per iteration (default: the policy's `engineChunkTokens`, else the engine's). */
  readonly chunkTokens?: number;
  /** Each engine's host KV pool in tokens (swap instead of recomputation; fastserve). Default: none. */
  readonly hostKvTokens?: number;
  /** Requests an engine runs at once (llama.cpp: its slots). Default: the engine's. */
  readonly maxRunning?: number;
  /** Prefixes are exclusive (llama.cpp slots): the engines recompute busy ones, the policy is told so. */
  readonly exclusivePrefixes?: boolean;
  /** The policy's options beyond the registry's defaults (the ablation switches E2's features here). */
  readonly policyOptions?: Readonly<Record<string, unknown>>;
  /** SLO targets in seconds, for attainment. */
  readonly slo?: { readonly ttft: number; readonly tpot: number };
  /** Leave requests arriving before this time out of the latency and hit-rate figures (`summarize`). */
  readonly warmupSeconds?: number;
  /**
   * A length predictor, `NAME` or `NAME:KEY=VALUE,...` (core/length's registry; seeded with `seed`
   * unless it names one): each request is predicted at arrival. Absent: no predictions.
   */
  readonly predictor?: string;
  readonly onProgress?: (finished: number) => void;
  /** Told after every iteration (diagnostics: an experiment measuring what the batches held). */
  readonly onIteration?: SimulatorOptions['onIteration'];
}

export interface PercentileSummary {
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
}

/** A fleet change at run time: the simulator's `FleetAction`, with an added instance as a fleet spec. */
export type SimFleetAction =
  | { readonly at: number; readonly action: 'add'; readonly spec: FleetInstance }
  | Exclude<FleetAction, { readonly action: 'add' }>;

/** The `preble sim --json` object for one policy (docs/design.md), plus diagnostics. */
export interface SimReport {
  readonly policy: string;
  readonly workload: string;
  readonly instances: number;
  readonly rps: number;
  readonly requests: number;
  readonly completed: number;
  /**
   * Only when some were: requests refused because no instance could hold their prompt and output in
   * its KV, or none the policy would pick among the larger ones after a smaller one refused them (a
   * server's context-length refusal; `SimResult.refused`); counted in `requests`, not in `completed` or
   * any latency figure.
   */
  readonly refused?: number;
  /**
   * Only when some were: requests an instance refused as too long for its KV and a larger one then
   * served (`SimResult.rerouted`); counted in every figure.
   */
  readonly rerouted?: number;
  readonly latency: PercentileSummary;
  readonly ttft: PercentileSummary;
  readonly tpot: PercentileSummary;
  readonly normalizedTtft: PercentileSummary;
  readonly cacheHitRate: number;
  readonly throughputRps: number;
  readonly perInstance: readonly { requests: number; busyFraction: number; cacheHitRate: number }[];
  readonly sloAttainment?: { readonly ttft: number; readonly tpot: number; readonly both: number };
  /**
   * With a warm-up (`SimSpec.warmupSeconds`): its length, the completed requests it left out, and the
   * latency over every completed request (the whole run), so a report can show both views.
   */
  readonly warmup?: {
    readonly seconds: number;
    readonly excluded: number;
    readonly wholeRunLatency: PercentileSummary;
  };
  /** With a fleet: its GPUs, and its price per hour where every instance has one. */
  readonly gpus?: number;
  readonly costPerHour?: number;
  readonly queuePolicy: QueuePolicyName;
  /** Only with a length predictor (`SimSpec.predictor`): its spec. */
  readonly predictor?: string;
  /**
   * Only when some request was disaggregated: seconds from the start of its KV transfer to the KV's
   * availability on the decode instance (for layer-wise, the residue after the prefill).
   */
  readonly transfer?: PercentileSummary;
  /**
   * Only when some KV moved: over the transfers, the KV tokens of the prefill legs (`kvTokens`), the
   * tokens that moved (the rest was cached on the decode instance) and their bytes.
   */
  readonly kvMoved?: {
    readonly transfers: number;
    readonly kvTokens: number;
    readonly tokens: number;
    readonly bytes: number;
  };
  /** Only when some request was disaggregated: its journey, stage by stage (`journeyStages`). */
  readonly stages?: JourneyStages;
  /** Only when the fleet changed during the run (fleet actions, policy requests): what changed, when. */
  readonly fleetLog?: readonly FleetLogEntry[];
  /**
   * Only when the policy migrates (llumnix; aladdin's re-balancing): migrations asked for, done and
   * aborted, and the KV tokens their rounds copied (aborted ones' included); `queued`: the done ones
   * that were queued moves (no KV), when there were any.
   */
  readonly migrations?: {
    readonly asked: number;
    readonly done: number;
    readonly aborted: number;
    readonly copiedTokens: number;
    readonly queued?: number;
  };
  /** Only with a host KV pool (`hostKvTokens`): preemptions, and how many of them swapped out and back in. */
  readonly swaps?: { readonly preemptions: number; readonly swapOuts: number; readonly swapIns: number };
  /** Only with a provisioner: GPU-seconds held, mean GPUs, peak instances, adds and removals. */
  readonly provisioning?: ProvisioningFigures;
  /** Decisions per branch name the policy declares (only branches taken appear). */
  readonly branches: Readonly<Record<string, number>>;
  /** Share of prompt tokens the policy expected to be cached where it sent them. */
  readonly predictedHitRate: number;
  readonly meanOutputTokens: number;
  readonly durationSeconds: number;
}

export function resolveQueuePolicy(
  queuePolicy: QueuePolicyName | 'auto' | undefined,
  policy?: string,
): QueuePolicyName {
  if (queuePolicy !== undefined && queuePolicy !== 'auto') return queuePolicy;
  return (policy === undefined ? undefined : policyEntry(policy).engineQueuePolicy) ?? 'lpm';
}

/** The chunked-prefill budget the run or its policy sets (undefined: the engine's default). */
function chosenChunkTokens(spec: SimSpec): number | undefined {
  return spec.chunkTokens ?? policyEntry(spec.policy).engineChunkTokens;
}

/** The chunked-prefill budget of a run's engines, where an instance sets none of its own. */
export function runChunkTokens(spec: SimSpec): number {
  return chosenChunkTokens(spec) ?? defaultChunkedPrefillTokens;
}

/** Run one simulation and summarize it; returns the raw result too, for CSV and plots. */
export function runSimulation(spec: SimSpec): { report: SimReport; result: SimResult } {
  const queuePolicy = resolveQueuePolicy(spec.queuePolicy, spec.policy);
  const entry = policyEntry(spec.policy);
  const chunkTokens = chosenChunkTokens(spec);
  // The policy's prefill batching from each prefill instance's cost model (DistServe's L_m), where
  // neither the run nor the instance sets a chunk budget.
  const batching = spec.chunkTokens === undefined ? entry.prefillBatching : undefined;
  const policyOptions = resolvePolicyOptions(spec.policy, spec.policyOptions ?? {}, spec.seed);
  const own = entry.engineQueuePolicyOptions?.(policyOptions);
  const queuePolicyOptions =
    spec.queuePolicyOptions === undefined ? own : { ...own, ...spec.queuePolicyOptions };
  // The policy's queue policy for an instance's role (Splitwise's mixed machines), where neither the
  // run nor the instance names one.
  const byRole =
    spec.queuePolicy === undefined || spec.queuePolicy === 'auto' ? entry.engineQueuePolicyByRole : undefined;
  const forPolicy = (instance: SimInstance): SimInstance => {
    const roleQueue = instance.engine?.queuePolicy === undefined ? byRole?.[instance.role] : undefined;
    const withQueue =
      roleQueue === undefined
        ? instance
        : { ...instance, engine: { ...instance.engine, queuePolicy: roleQueue } };
    return batching === undefined ||
      instance.role !== 'prefill' ||
      instance.engine?.chunkedPrefillTokens !== undefined
      ? withQueue
      : { ...withQueue, engine: { ...withQueue.engine, ...batching(instance.costModel, policyOptions) } };
  };
  const policy = createGlobalPolicy(
    spec.policy,
    { costModel: spec.costModel, seed: spec.seed, ...(spec.slo === undefined ? {} : { slo: spec.slo }) },
    spec.policyOptions,
  );
  // A provisioner's adds are built like the fleet's first instance of the role (else its first, else the preset).
  const templateOf = (role: Role): FleetInstance | undefined => {
    const like = spec.fleet?.find((i) => i.role === role) ?? spec.fleet?.[0];
    return like === undefined ? undefined : { ...like, role };
  };
  const setup: ProvisioningSetup | undefined =
    spec.provisioner === undefined
      ? undefined
      : {
          provisioner: createProvisioner(spec.provisioner.choice),
          startupSeconds: spec.provisioner.startupSeconds,
          template: (role) => {
            const like = templateOf(role);
            return like === undefined
              ? { costModel: spec.costModel, role }
              : forPolicy(simInstance(like, spec.kvCapacityTokens));
          },
        };
  const hook = setup === undefined ? undefined : provisioningHook(setup, policy);
  const result = simulate({
    policy,
    ...(hook === undefined ? {} : { onTick: hook.onTick }),
    instances: spec.instances,
    costModel: spec.costModel,
    ...(spec.fleet === undefined
      ? {}
      : { fleet: simFleet(spec.fleet, spec.kvCapacityTokens).map(forPolicy) }),
    ...(spec.kvTransfer === undefined ? {} : { kvTransfer: spec.kvTransfer }),
    ...(spec.fleetActions === undefined
      ? {}
      : {
          fleetActions: spec.fleetActions.map((a) =>
            a.action === 'add' ? { ...a, spec: forPolicy(simInstance(a.spec, spec.kvCapacityTokens)) } : a,
          ),
        }),
    engine: {
      queuePolicy,
      ...(queuePolicyOptions === undefined ? {} : { queuePolicyOptions }),
      ...(chunkTokens === undefined ? {} : { chunkedPrefillTokens: chunkTokens }),
      ...(spec.maxRunning === undefined ? {} : { maxRunning: spec.maxRunning }),
      ...(spec.hostKvTokens === undefined ? {} : { hostKvTokens: spec.hostKvTokens }),
      ...(spec.exclusivePrefixes === true ? { exclusivePrefixes: true } : {}),
    },
    ...(spec.exclusivePrefixes === undefined ? {} : { exclusivePrefixes: spec.exclusivePrefixes }),
    requests: spec.requests(),
    ...(spec.predictor === undefined
      ? {}
      : { predictor: createLengthPredictor(spec.predictor, { seed: spec.seed }) }),
    ...(spec.onProgress === undefined ? {} : { onProgress: spec.onProgress }),
    ...(spec.onIteration === undefined ? {} : { onIteration: spec.onIteration }),
  });
  const provisioning =
    setup === undefined || hook === undefined
      ? undefined
      : provisioningFigures(setup, hook, result, gpusOf(spec, result, templateOf), firstStart(result));
  const base = report(spec, queuePolicy, result);
  return { report: provisioning === undefined ? base : { ...base, provisioning }, result };
}

/** GPUs of each instance of the run: a fleet's own, an added one's like its template's; 1 without a fleet. */
function gpusOf(
  spec: SimSpec,
  result: SimResult,
  templateOf: (role: Role) => FleetInstance | undefined,
): (instance: number) => number {
  const addedRole = new Map(
    result.fleetLog.filter((e) => e.event === 'added').map((e) => [e.instance, e.role]),
  );
  return (i) => {
    const initial = spec.fleet?.[i];
    if (initial !== undefined) return initial.gpus;
    const role = addedRole.get(i);
    return (role === undefined ? undefined : templateOf(role)?.gpus) ?? 1;
  };
}

/** The run's start: its first arrival. */
function firstStart(result: SimResult): number {
  return result.records.length === 0 ? 0 : result.records[0]!.arrival;
}

/**
 * The spec fields for a run on `fleet` (`--fleet`): its instances, and for prefill and decode
 * instances the links and transfer mode the KV moves with. `kvCapacityTokens` overrides every preset's.
 */
export function fleetRun(
  fleet: Fleet,
  kvCapacityTokens?: number,
): Pick<SimSpec, 'instances' | 'fleet' | 'kvTransfer' | 'kvCapacityTokens'> {
  // Every fleet carries its links: a colocated run ignores them, and a fleet action may add a prefill
  // or decode instance or turn a mixed one into either.
  return {
    instances: fleet.instances.length,
    fleet: fleet.instances,
    kvTransfer: { placement: fleet, mode: fleet.transferMode },
    ...(kvCapacityTokens === undefined ? {} : { kvCapacityTokens }),
  };
}

/** Each fleet instance as the simulator runs it: its own preset and engine settings. */
function simFleet(fleet: readonly FleetInstance[], kvCapacityTokens: number | undefined): SimInstance[] {
  return fleet.map((instance) => simInstance(instance, kvCapacityTokens));
}

/** One fleet instance as the simulator runs it. */
function simInstance(instance: FleetInstance, kvCapacityTokens: number | undefined): SimInstance {
  return {
    role: instance.role,
    costModel: costModelPreset(
      instance.costModel,
      kvCapacityTokens === undefined ? {} : { kvCapacityTokens },
    ),
    engine: {
      ...(instance.queuePolicy === 'auto' ? {} : { queuePolicy: instance.queuePolicy }),
      ...(instance.chunkTokens === undefined ? {} : { chunkedPrefillTokens: instance.chunkTokens }),
      ...(instance.maxRunning === undefined ? {} : { maxRunning: instance.maxRunning }),
    },
    kvBytesPerToken: instance.kvBytesPerToken,
    layers: instance.layers,
  };
}

function report(spec: SimSpec, queuePolicy: QueuePolicyName, result: SimResult): SimReport {
  const { records } = result;
  const summary = summarize(records, {
    ...(spec.slo === undefined ? {} : { slo: spec.slo }),
    ...(spec.warmupSeconds === undefined ? {} : { warmupSeconds: spec.warmupSeconds }),
    refused: result.refused.length,
  });
  const branches: Record<string, number> = {};
  let prompt = 0;
  let predicted = 0;
  let output = 0;
  const transfers: number[] = [];
  const moved = { transfers: 0, kvTokens: 0, tokens: 0, bytes: 0 };
  const stages = journeyStages(records);
  for (const r of records) {
    if (r.transferEnd >= 0) transfers.push(r.transferEnd - r.transferStart);
    if (r.movedKvTokens >= 0) {
      moved.transfers++;
      moved.kvTokens += r.promptTokens;
      moved.tokens += r.movedKvTokens;
      moved.bytes += r.movedKvBytes;
    }
    branches[r.branch] = (branches[r.branch] ?? 0) + 1;
    prompt += r.promptTokens;
    predicted += r.predictedCachedTokens;
    output += r.outputTokens;
  }
  return {
    policy: spec.policy,
    workload: spec.workload,
    instances: spec.instances,
    rps: spec.rps,
    requests: records.length + result.refused.length,
    completed: summary.completed,
    ...(result.refused.length === 0 ? {} : { refused: result.refused.length }),
    ...(result.rerouted === 0 ? {} : { rerouted: result.rerouted }),
    latency: summary.latency,
    ttft: summary.ttft,
    tpot: summary.tpot,
    normalizedTtft: summary.normalizedTtft,
    cacheHitRate: summary.cacheHitRate,
    throughputRps: summary.throughputRps,
    perInstance: perInstance(records, result.busySeconds, result.durationSeconds),
    ...(summary.sloAttainment === undefined ? {} : { sloAttainment: summary.sloAttainment }),
    ...(summary.warmupExcluded === undefined
      ? {}
      : {
          warmup: {
            seconds: spec.warmupSeconds!,
            excluded: summary.warmupExcluded,
            wholeRunLatency: summary.wholeRunLatency!,
          },
        }),
    ...fleetFigures(spec.fleet),
    queuePolicy,
    ...(spec.predictor === undefined ? {} : { predictor: spec.predictor }),
    ...(transfers.length === 0 ? {} : { transfer: transferSummary(transfers) }),
    ...(moved.transfers === 0 ? {} : { kvMoved: moved }),
    ...(stages === undefined ? {} : { stages }),
    ...(result.fleetLog.length === 0 ? {} : { fleetLog: result.fleetLog }),
    ...(result.migrationLog === undefined ? {} : { migrations: migrationSummary(result.migrationLog) }),
    ...(spec.hostKvTokens === undefined ? {} : { swaps: swapSummary(result.engines) }),
    branches,
    predictedHitRate: prompt > 0 ? predicted / prompt : 0,
    meanOutputTokens: records.length > 0 ? output / records.length : 0,
    durationSeconds: result.durationSeconds,
  };
}

export type { SimRecord };

function swapSummary(engines: readonly EngineSnapshot[]): NonNullable<SimReport['swaps']> {
  let preemptions = 0;
  let swapOuts = 0;
  let swapIns = 0;
  for (const e of engines) {
    preemptions += e.preemptionsTotal;
    swapOuts += e.swapOutsTotal ?? 0;
    swapIns += e.swapInsTotal ?? 0;
  }
  return { preemptions, swapOuts, swapIns };
}

function migrationSummary(log: readonly MigrationLogEntry[]): NonNullable<SimReport['migrations']> {
  let done = 0;
  let aborted = 0;
  let copiedTokens = 0;
  let queued = 0;
  for (const e of log) {
    if (e.event === 'done') {
      done++;
      if (e.queued === true) queued++;
    } else if (e.event === 'aborted') aborted++;
    else copiedTokens += e.tokens ?? 0;
  }
  return { asked: done + aborted, done, aborted, copiedTokens, ...(queued > 0 ? { queued } : {}) };
}

function transferSummary(seconds: number[]): PercentileSummary {
  const { mean, p50, p90, p99 } = percentiles(seconds);
  return { mean, p50, p90, p99 };
}

/** Mean and p99 of one stage, in seconds. */
export interface StageSummary {
  readonly mean: number;
  readonly p99: number;
}

/**
 * The five stages of a disaggregated request, plus the pull wait, each over the requests that reached
 * their decode instance and finished: `prefillQueue` arrival -> prefill start (admission on the prefill
 * instance), `prefill` -> its end (the first token), `transferWait` -> the transfer's start (a `pull`
 * waiting for the decode instance's memory; 0 in the other modes), `transfer` -> the KV on the decode
 * instance (for layer-wise, the residue after the prefill), `decodeQueue` -> admission on the decode
 * instance (the adopt queue), `decode` -> the finish. They add up to the latency.
 */
export interface JourneyStages {
  readonly prefillQueue: StageSummary;
  readonly prefill: StageSummary;
  readonly transferWait: StageSummary;
  readonly transfer: StageSummary;
  readonly decodeQueue: StageSummary;
  readonly decode: StageSummary;
}

/** The stages of the run's disaggregated requests; undefined when none was (a colocated run). */
export function journeyStages(records: readonly SimRecord[]): JourneyStages | undefined {
  const names = ['prefillQueue', 'prefill', 'transferWait', 'transfer', 'decodeQueue', 'decode'] as const;
  const seconds = names.map(() => [] as number[]);
  for (const r of records) {
    if (r.decodeStart < 0 || r.finish < 0) continue;
    const m = journeyMarks(r);
    for (let i = 0; i < names.length; i++) seconds[i]!.push(m[i + 1]! - m[i]!);
  }
  if (seconds[0]!.length === 0) return undefined;
  const stage = (i: number): StageSummary => {
    const { mean, p99 } = percentiles(seconds[i]!);
    return { mean, p99 };
  };
  return {
    prefillQueue: stage(0),
    prefill: stage(1),
    transferWait: stage(2),
    transfer: stage(3),
    decodeQueue: stage(4),
    decode: stage(5),
  };
}

function fleetFigures(fleet: readonly FleetInstance[] | undefined): { gpus?: number; costPerHour?: number } {
  if (fleet === undefined) return {};
  const cost = fleetCostPerHour(fleet);
  return { gpus: fleetGpuCount(fleet), ...(cost === undefined ? {} : { costPerHour: cost }) };
}
