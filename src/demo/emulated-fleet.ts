import type { Role } from '../core/types.ts';
import { createEngineServer, type EngineServer } from '../emulator/server.ts';
import { metricValues } from '../gateway/prometheus-text.ts';
import type { EngineCounters, FleetFactory } from './fleet.ts';

const COUNTERS = [
  'vllm:gpu_prefix_cache_queries_total',
  'vllm:gpu_prefix_cache_hits_total',
  'vllm:request_queue_time_seconds_sum',
  'vllm:request_queue_time_seconds_count',
];

/**
 * `preble engine` replicas in this process, running `timeScale` times faster than real time, with the
 * layout's roles (`--role prefill|decode`: decode engines pull the KV over HTTP and wait its transfer
 * over the default `--kv-link`, `emulated`) and queue policy (default lpm).
 */
export function emulatedFleet(model: string, timeScale: number): FleetFactory {
  return async (count, layout) => {
    const roles: Role[] = Array.from({ length: count }, (_, i) => layout?.roles[i] ?? 'mixed');
    const engines: { engine: EngineServer; url: string }[] = [];
    try {
      for (const role of roles) {
        const engine = createEngineServer({
          model,
          timeScale,
          queuePolicy: layout?.queuePolicy ?? 'lpm',
          role,
        });
        engines.push({ engine, url: (await engine.listen(0, '127.0.0.1')).url });
      }
    } catch (error) {
      for (const e of engines) await e.engine.close(0);
      throw error;
    }
    return {
      urls: engines.map((e) => e.url),
      dialect: 'preble',
      roles,
      engineCounters: () =>
        Promise.all(
          engines.map(async ({ engine }): Promise<EngineCounters> => {
            const values = metricValues(await engine.registry.metrics(), COUNTERS);
            return {
              promptTokens: values.get('vllm:gpu_prefix_cache_queries_total') ?? 0,
              cachedTokens: values.get('vllm:gpu_prefix_cache_hits_total') ?? 0,
              queueSeconds: values.get('vllm:request_queue_time_seconds_sum') ?? 0,
              queued: values.get('vllm:request_queue_time_seconds_count') ?? 0,
            };
          }),
        ),
      async stop() {
        for (const e of engines) await e.engine.close(0);
      },
    };
  };
}
