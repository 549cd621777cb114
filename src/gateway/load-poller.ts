import type { ReplicaSet } from './replicas.ts';

/**
 * One round of load polling: every routable replica's /metrics, read in its dialect, handed to the
 * pool's policy as load signals (sal and polled power-of-two need them). A replica that does not answer is
 * skipped this round: health checks and breakers decide what that means.
 */
export async function pollLoad(replicas: ReplicaSet, now: () => number): Promise<void> {
  await Promise.all(
    replicas.routable().map(async (r) => {
      try {
        const res = await r.control.request({
          path: '/metrics',
          method: 'GET',
          headersTimeout: 2000,
          bodyTimeout: 2000,
        });
        const text = await res.body.text();
        if (res.statusCode !== 200) return;
        const signal = r.dialect.loadSignal(text, r.kvTokens);
        if (signal !== undefined) r.viewPool?.policy.loadSignal(r.id, signal, now());
      } catch {
        // Unreachable this round: health checks and breakers decide what that means, not the poller.
      }
    }),
  );
}
