import type { Role } from '../core/types.ts';
import { metricValues } from '../gateway/prometheus-text.ts';
import { startLlamaReplicas, startLlamaSharedSlotReplicas } from '../real/replicas.ts';
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
 * the slots hold: the settings under which routing decides cache hits (docs/real-backend.md). A layout
 * with prefill or decode replicas gets one shared `--slot-save-path`, through which the gateway moves
 * each prefilled slot to its decode replica (src/gateway/pd-llamacpp.ts); llama.cpp has no roles of
 * its own, so the roles are the gateway's.
 */
export function llamaFleet(options: LlamaFleetOptions): FleetFactory {
  return async (count, layout) => {
    const roles: Role[] = Array.from({ length: count }, (_, i) => layout?.roles[i] ?? 'mixed');
    const settings = {
      binary: options.binary,
      model: options.model,
      count,
      threads: 1,
      slots: options.slots,
      ctx: options.ctx,
      cacheRamMiB: 0,
    };
    const replicas = roles.some((r) => r !== 'mixed')
      ? await startLlamaSharedSlotReplicas(settings)
      : await startLlamaReplicas(settings);
    return {
      urls: replicas.urls,
      dialect: 'llamacpp',
      roles,
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
