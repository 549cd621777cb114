import { type HttpRecord, runHttpLoad } from '../bench/http-load.ts';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { createGlobalPolicy } from '../core/policies/registry.ts';
import { createGateway } from '../gateway/server.ts';
import { percentiles } from '../report/stats.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import type { FleetFactory } from './fleet.ts';

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
  /** Which run of this policy (1-based; see DemoOptions.repeats). */
  readonly run: number;
  readonly workload: string;
  readonly instances: number;
  readonly rps: number;
  readonly requests: number;
  readonly completed: number;
  readonly latency: ReturnType<typeof percentiles>;
  readonly ttft: ReturnType<typeof percentiles>;
  readonly cacheHitRate: number;
  readonly throughputRps: number;
  readonly wallSeconds: number;
  readonly perInstance: { requests: number; cacheHitRate: number; promptSeconds?: number }[];
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
  const schedule = Array.from({ length: repeats }, (_, r) =>
    options.policies.map((policy) => ({ policy, run: r + 1 })),
  ).flat();
  for (const [index, { policy, run }] of schedule.entries()) {
    listener.started?.(policy, run, index + 1, schedule.length);
    const fleet = await options.fleet(options.replicas);
    try {
      const gateway = createGateway({
        createPolicy: () => createGlobalPolicy(policy, { costModel, seed: options.seed }),
        replicas: fleet.urls.map((url) => ({ url, dialect: fleet.dialect })),
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
        const result = summarize(policy, run, options, fleet.urls, records, wallSeconds, promptSeconds);
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
    instances: options.replicas,
    rps: options.rps,
    requests: records.length,
    completed: ok.length,
    latency: percentiles(ok.map((r) => r.latency)),
    ttft: percentiles(ok.map((r) => r.ttft)),
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
