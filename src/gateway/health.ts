import type { ReplicaSet } from './replicas.ts';

export interface HealthOptions {
  readonly intervalSeconds: number;
  readonly timeoutSeconds: number;
}

/**
 * One round of active health checks: GET /health on every present replica (2xx is healthy; a
 * timeout, refusal or other status is not). The round also lets open breakers half-open on time.
 */
export async function checkHealth(replicas: ReplicaSet, options: HealthOptions): Promise<void> {
  const timeout = options.timeoutSeconds * 1000;
  await Promise.all(
    replicas.present().map(async (r) => {
      let ok = false;
      try {
        const res = await r.control.request({
          path: '/health',
          method: 'GET',
          headersTimeout: timeout,
          bodyTimeout: timeout,
          signal: AbortSignal.timeout(timeout),
        });
        await res.body.dump();
        ok = res.statusCode >= 200 && res.statusCode < 300;
      } catch {
        ok = false;
      }
      if (!r.removed) replicas.healthChecked(r, ok);
    }),
  );
  replicas.reconcileAll();
}
