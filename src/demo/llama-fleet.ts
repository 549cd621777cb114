import { metricValues } from '../gateway/prometheus-text.ts';
import { startLlamaReplicas } from '../real/replicas.ts';
import type { FleetFactory } from './fleet.ts';

export interface LlamaFleetOptions {
  readonly binary: string;
  readonly model: string;
  /** Concurrent sequences per replica (-np). */
  readonly slots: number;
  /** KV context per replica (-c), shared by its slots. */
  readonly ctx: number;
}

/**
 * Real llama-server replicas, one thread each and no host-RAM prompt cache, so what is cached is what
 * the slots hold: the settings under which routing decides cache hits (docs/real-backend.md).
 */
export function llamaFleet(options: LlamaFleetOptions): FleetFactory {
  return async (count, layout) => {
    if (layout?.roles.some((r) => r !== 'mixed'))
      throw new Error(
        "the demo's llama.cpp fleet starts mixed replicas only (prefill/decode ones need a shared --slot-save-path: src/real/replicas.ts startLlamaPdReplicas)",
      );
    const replicas = await startLlamaReplicas({
      binary: options.binary,
      model: options.model,
      count,
      threads: 1,
      slots: options.slots,
      ctx: options.ctx,
      cacheRamMiB: 0,
    });
    return {
      urls: replicas.urls,
      dialect: 'llamacpp',
      roles: replicas.urls.map(() => 'mixed' as const),
      promptSeconds: () =>
        Promise.all(
          replicas.urls.map(async (url) => {
            const text = await fetch(`${url}/metrics`).then((r) => r.text());
            return (
              metricValues(text, ['llamacpp:prompt_seconds_total']).get('llamacpp:prompt_seconds_total') ?? 0
            );
          }),
        ),
      stop: () => replicas.stop(),
    };
  };
}
