import { type HttpRecord, runHttpLoad } from '../bench/http-load.ts';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { createGlobalPolicy } from '../core/policies/registry.ts';
import { createEngineServer } from '../emulator/server.ts';
import { createGateway } from '../gateway/server.ts';
import { percentiles } from '../report/stats.ts';
import { createWorkload } from '../workloads/registry.ts';
import { renderTokens } from './render.ts';

export interface DemoOptions {
  readonly replicas: number;
  readonly workload: string;
  readonly requests: number;
  /** Arrival rate in the replicas' emulated seconds. */
  readonly rps: number;
  readonly policies: readonly string[];
  /** Cost-model preset the emulated replicas (and E2) use. */
  readonly model: string;
  /** How much faster than real time the replicas run. */
  readonly timeScale: number;
  readonly seed: number;
}

/** One policy's run, in the shape of `preble sim --json` (what HTTP cannot measure is left out). */
export interface DemoResult {
  readonly policy: string;
  readonly workload: string;
  readonly instances: number;
  readonly rps: number;
  readonly requests: number;
  readonly completed: number;
  readonly latency: ReturnType<typeof percentiles>;
  readonly ttft: ReturnType<typeof percentiles>;
  readonly cacheHitRate: number;
  readonly throughputRps: number;
  readonly perInstance: { requests: number; cacheHitRate: number }[];
}

/**
 * For each policy in turn: fresh emulated replicas and a gateway on free local ports, the same
 * request stream sent over real HTTP, then everything stopped. Times are in emulated seconds.
 */
export async function runDemo(
  options: DemoOptions,
  onPolicy?: (r: DemoResult) => void,
): Promise<DemoResult[]> {
  const requests = [
    ...createWorkload(options.workload, { requests: options.requests, rps: options.rps, seed: options.seed }),
  ];
  const costModel = costModelPreset(options.model);
  const results: DemoResult[] = [];
  for (const policy of options.policies) {
    const engines = [];
    for (let i = 0; i < options.replicas; i++) {
      const engine = createEngineServer({
        model: options.model,
        timeScale: options.timeScale,
        queuePolicy: 'lpm',
      });
      engines.push({ engine, url: (await engine.listen(0, '127.0.0.1')).url });
    }
    const gateway = createGateway({
      policy: createGlobalPolicy(policy, { costModel, seed: options.seed }),
      replicas: engines.map((e) => e.url),
      replicaKvTokens: costModel.kvCapacityTokens,
      timeScale: options.timeScale,
    });
    try {
      const url = await gateway.listen(0, '127.0.0.1');
      const records = await runHttpLoad({
        url,
        model: options.model,
        requests,
        render: renderTokens,
        timeScale: options.timeScale,
      });
      const result = summarize(
        policy,
        options,
        engines.map((e) => e.url),
        records,
      );
      onPolicy?.(result);
      results.push(result);
    } finally {
      await gateway.close();
      for (const e of engines) await e.engine.close(0);
    }
  }
  return results;
}

function summarize(
  policy: string,
  options: DemoOptions,
  urls: readonly string[],
  records: readonly HttpRecord[],
): DemoResult {
  const ok = records.filter((r) => r.status === 200 && r.ttft >= 0);
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
    workload: options.workload,
    instances: options.replicas,
    rps: options.rps,
    requests: records.length,
    completed: ok.length,
    latency: percentiles(ok.map((r) => r.latency)),
    ttft: percentiles(ok.map((r) => r.ttft)),
    cacheHitRate: prompt > 0 ? cached / prompt : 0,
    throughputRps: end > begin ? ok.length / (end - begin) : 0,
    perInstance: urls.map((u) => {
      const mine = ok.filter((r) => r.replica === u);
      const p = mine.reduce((s, r) => s + r.promptTokens, 0);
      return {
        requests: mine.length,
        cacheHitRate: p > 0 ? mine.reduce((s, r) => s + r.cachedTokens, 0) / p : 0,
      };
    }),
  };
}
