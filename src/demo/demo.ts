import { type HttpRecord, runHttpLoad } from '../bench/http-load.ts';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { createGlobalPolicy } from '../core/policies/registry.ts';
import type { Role } from '../core/types.ts';
import type { GatewayMetrics } from '../gateway/metrics.ts';
import { createGateway } from '../gateway/server.ts';
import { percentiles } from '../report/stats.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import type { EngineCounters, FleetFactory } from './fleet.ts';

/**
 * One configuration of `preble demo --pd`: a policy on a fleet of roles (`distserve` on 2P2D). Its
 * name labels the results (`distserve@2P2D`).
 */
export interface DemoConfiguration {
  readonly name: string;
  readonly policy: string;
  /** The fleet in `--fleet` shorthand (`2P2D`, `4M`, `1P1D2M`). */
  readonly fleet: string;
  /** Each replica's role, in the order the simulator numbers the shorthand's instances. */
  readonly roles: readonly Role[];
  /** The engines' waiting-queue policy (the simulator's `auto` for the policy: fcfs for distserve). */
  readonly queuePolicy: string;
}

export interface DemoOptions {
  readonly replicas: number;
  /** Label of the request stream. */
  readonly workload: string;
  /** The stream every policy gets, identical; arrival times in the replicas' seconds. */
  readonly requests: readonly WorkloadRequest[];
  /** Token ids to the prompt text the replicas tokenize back to the same sharing. */
  readonly render: (tokens: Uint32Array) => string;
  /** Arrival rate in the replicas' seconds (for the report). */
  readonly rps: number;
  readonly policies: readonly string[];
  /** The model name requests ask for. */
  readonly model: string;
  /** Cost-model preset E2 prices work with (the replicas' hardware). */
  readonly costModel: string;
  /** KV tokens a replica holds, when not the preset's (llama.cpp: what its slots hold). */
  readonly replicaKvTokens?: number;
  /** How much faster than real time the replicas run (1 for real engines). */
  readonly timeScale: number;
  readonly seed: number;
  readonly fleet: FleetFactory;
  /** Added to every request body. */
  readonly extraBody?: Readonly<Record<string, unknown>>;
  /** Runs of each policy (default 1): the verdict states their spread. */
  readonly repeats?: number;
  /**
   * Policies on fleets of roles (`preble demo --pd`), run instead of `policies` on `replicas` mixed
   * replicas; each has its own number of replicas.
   */
  readonly configurations?: readonly DemoConfiguration[];
}

/** What the demo tells its caller while it runs (the CLI shows progress; tests ignore it). */
export interface DemoListener {
  /** A run begins: `index` of `total` runs overall. */
  started?(policy: string, run: number, index: number, total: number): void;
  /** Requests answered so far in the current run. */
  progress?(finished: number, requests: number): void;
  finished?(result: DemoResult): void;
}

/** One policy's run, in the shape of `preble sim --json` (what HTTP cannot measure is left out). */
export interface DemoResult {
  readonly policy: string;
  /** `--pd` runs: the configuration's name (`distserve@2P2D`), fleet shorthand and disaggregation figures. */
  readonly configuration?: string;
  readonly fleet?: string;
  /** Which run of this policy (1-based; see DemoOptions.repeats). */
  readonly run: number;
  readonly workload: string;
  readonly instances: number;
  readonly rps: number;
  readonly requests: number;
  readonly completed: number;
  readonly latency: ReturnType<typeof percentiles>;
  readonly ttft: ReturnType<typeof percentiles>;
  /** Time per output token after the first, per request (as `preble sim`'s). */
  readonly tpot: ReturnType<typeof percentiles>;
  /**
   * Share of prompt tokens the answers report cached. A disaggregated request's decode replica reports
   * its whole prompt cached (it adopted the KV): see `pd.prefillCachedShare` for the prefills' own.
   */
  readonly cacheHitRate: number;
  readonly throughputRps: number;
  readonly wallSeconds: number;
  readonly perInstance: {
    requests: number;
    cacheHitRate: number;
    promptSeconds?: number;
    /** `--pd` runs: the replica's role and the prefills it ran for requests decoded elsewhere. */
    role?: Role;
    prefills?: number;
  }[];
  /** `--pd` runs: what the gateway and the engines measured of the two legs. */
  readonly pd?: PdFigures;
}

/** The legs of a `--pd` run (replicas' seconds; means over the requests that had the leg). */
export interface PdFigures {
  /** Requests whose prefill and decode ran on different replicas. */
  readonly disaggregated: number;
  /** Prefill leg: dispatch to the prefill replica's answer (queue and prompt), from the gateway. */
  readonly prefillSeconds?: number;
  /** The KV transfer as the decode engines report it. */
  readonly transferSeconds?: number;
  /** Decode leg: dispatch to its first token (transfer, adoption, first step). */
  readonly decodeTtftSeconds?: number;
  /** Waiting before admission on the replicas that run prompts (prefill and mixed), per request. */
  readonly prefillQueueSeconds?: number;
  /**
   * Cached share of the prompt tokens the prefill-capable replicas (prefill and mixed) looked up; absent
   * where the engines do not count lookups (llama-server reports the tokens it computed, not those it found).
   */
  readonly prefillCachedShare?: number;
  /** Share of the mean TTFT spent in KV transfers (transfer mean x disaggregated share / TTFT mean). */
  readonly transferShareOfTtft: number;
}

/**
 * For each policy in turn: a fresh fleet and a gateway on free local ports, the same request
 * stream sent over real HTTP, then everything stopped. Times are in the replicas' seconds. With
 * repeats, every policy runs once before any runs again, so a slow spell of the machine falls on
 * all of them rather than on one.
 */
export async function runDemo(options: DemoOptions, listener: DemoListener = {}): Promise<DemoResult[]> {
  const costModel = costModelPreset(
    options.costModel,
    options.replicaKvTokens === undefined ? {} : { kvCapacityTokens: options.replicaKvTokens },
  );
  const repeats = options.repeats ?? 1;
  const results: DemoResult[] = [];
  const configurations: readonly (DemoConfiguration & { readonly pd: boolean })[] =
    options.configurations?.map((c) => ({ ...c, pd: true })) ??
    options.policies.map((policy) => ({
      name: policy,
      policy,
      fleet: `${options.replicas}M`,
      roles: Array.from({ length: options.replicas }, () => 'mixed' as const),
      queuePolicy: 'lpm',
      pd: false,
    }));
  const schedule = Array.from({ length: repeats }, (_, r) =>
    configurations.map((configuration) => ({ configuration, run: r + 1 })),
  ).flat();
  for (const [index, { configuration, run }] of schedule.entries()) {
    const { policy, roles, queuePolicy } = configuration;
    listener.started?.(configuration.name, run, index + 1, schedule.length);
    const fleet = await options.fleet(roles.length, { roles, queuePolicy });
    try {
      const gateway = createGateway({
        createPolicy: () => createGlobalPolicy(policy, { costModel, seed: options.seed }),
        replicas: fleet.urls.map((url, i) => ({ url, dialect: fleet.dialect, role: fleet.roles[i]! })),
        // The replicas serve the name the load asks for (llama-server would list its file's path).
        model: options.model,
        replicaKvTokens: costModel.kvCapacityTokens,
        timeScale: options.timeScale,
        // The start-up notes (which feedback each replica kind gives) are for operators; the demo's
        // output is its comparison. Errors still show.
        logLevel: 'error',
      });
      try {
        const url = await gateway.listen(0, '127.0.0.1');
        const started = performance.now();
        const records = await runHttpLoad({
          url,
          model: options.model,
          requests: options.requests,
          render: options.render,
          timeScale: options.timeScale,
          ...(options.extraBody === undefined ? {} : { extraBody: options.extraBody }),
          onFinished: (finished) => listener.progress?.(finished, options.requests.length),
        });
        const wallSeconds = (performance.now() - started) / 1000;
        const promptSeconds = await fleet.promptSeconds?.();
        const base = summarize(policy, run, options, fleet.urls, records, wallSeconds, promptSeconds);
        const result: DemoResult = configuration.pd
          ? withPd(
              base,
              configuration,
              fleet.urls,
              records,
              await gatewayLegs(gateway.metrics),
              await fleet.engineCounters?.(),
            )
          : base;
        listener.finished?.(result);
        results.push(result);
      } finally {
        await gateway.close();
      }
    } finally {
      await fleet.stop();
    }
  }
  return results;
}

function summarize(
  policy: string,
  run: number,
  options: DemoOptions,
  urls: readonly string[],
  records: readonly HttpRecord[],
  wallSeconds: number,
  promptSeconds: readonly number[] | undefined,
): DemoResult {
  const ok = records.filter((r) => r.status === 200 && r.ttft >= 0 && r.error === undefined);
  let prompt = 0;
  let cached = 0;
  for (const r of ok) {
    prompt += r.promptTokens;
    cached += r.cachedTokens;
  }
  const end = Math.max(...ok.map((r) => r.arrival + r.latency));
  const begin = Math.min(...ok.map((r) => r.arrival));
  return {
    policy,
    run,
    workload: options.workload,
    instances: urls.length,
    rps: options.rps,
    requests: records.length,
    completed: ok.length,
    latency: percentiles(ok.map((r) => r.latency)),
    ttft: percentiles(ok.map((r) => r.ttft)),
    tpot: percentiles(
      ok.filter((r) => r.outputTokens > 1).map((r) => (r.latency - r.ttft) / (r.outputTokens - 1)),
    ),
    cacheHitRate: prompt > 0 ? cached / prompt : 0,
    throughputRps: end > begin ? ok.length / (end - begin) : 0,
    wallSeconds,
    perInstance: urls.map((u, i) => {
      const mine = ok.filter((r) => r.replica === u);
      const p = mine.reduce((s, r) => s + r.promptTokens, 0);
      return {
        requests: mine.length,
        cacheHitRate: p > 0 ? mine.reduce((s, r) => s + r.cachedTokens, 0) / p : 0,
        ...(promptSeconds === undefined ? {} : { promptSeconds: promptSeconds[i]! }),
      };
    }),
  };
}

/** A `--pd` run's configuration, roles and legs over its summary. */
function withPd(
  base: DemoResult,
  configuration: DemoConfiguration,
  urls: readonly string[],
  records: readonly HttpRecord[],
  legs: GatewayLegs,
  counters: readonly EngineCounters[] | undefined,
): DemoResult {
  const ok = records.filter((r) => r.status === 200 && r.ttft >= 0 && r.error === undefined);
  const split = ok.filter((r) => r.prefillReplica !== '' && r.prefillReplica !== r.replica);
  const prompting = (counters ?? []).filter((_, i) => configuration.roles[i] !== 'decode');
  const sum = (f: (c: EngineCounters) => number) => prompting.reduce((s, c) => s + f(c), 0);
  const prompt = sum((c) => c.promptTokens);
  const queued = sum((c) => c.queued);
  const transfer = legs.transferSeconds;
  return {
    ...base,
    configuration: configuration.name,
    fleet: configuration.fleet,
    perInstance: base.perInstance.map((p, i) => ({
      ...p,
      role: configuration.roles[i]!,
      prefills: split.filter((r) => r.prefillReplica === urls[i]).length,
    })),
    pd: {
      disaggregated: split.length,
      ...optional('prefillSeconds', legs.prefillSeconds),
      ...optional('transferSeconds', transfer),
      ...optional('decodeTtftSeconds', legs.decodeTtftSeconds),
      ...optional('prefillQueueSeconds', queued > 0 ? sum((c) => c.queueSeconds) / queued : undefined),
      ...optional(
        'prefillCachedShare',
        counters === undefined ? undefined : prompt > 0 ? sum((c) => c.cachedTokens) / prompt : 0,
      ),
      transferShareOfTtft:
        transfer !== undefined && ok.length > 0 && base.ttft.mean > 0
          ? (transfer * split.length) / ok.length / base.ttft.mean
          : 0,
    },
  };
}

function optional<K extends string>(key: K, value: number | undefined): { [P in K]?: number } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: number };
}

interface GatewayLegs {
  readonly prefillSeconds: number | undefined;
  readonly transferSeconds: number | undefined;
  readonly decodeTtftSeconds: number | undefined;
}

/** The gateway's per-leg histograms as means (a fresh gateway per run, so they hold this run only). */
async function gatewayLegs(metrics: GatewayMetrics): Promise<GatewayLegs> {
  return {
    prefillSeconds: await histogramMean(metrics.pdPrefill),
    transferSeconds: await histogramMean(metrics.pdTransfer),
    decodeTtftSeconds: await histogramMean(metrics.pdDecodeTtft),
  };
}

async function histogramMean(h: GatewayMetrics['pdPrefill']): Promise<number | undefined> {
  const { values } = await h.get();
  let sum = 0;
  let count = 0;
  for (const v of values) {
    if (v.metricName?.endsWith('_sum') === true) sum += v.value;
    else if (v.metricName?.endsWith('_count') === true) count += v.value;
  }
  return count > 0 ? sum / count : undefined;
}
