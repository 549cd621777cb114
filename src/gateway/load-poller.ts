import type { GlobalPolicy, InstanceLoadSignal } from '../core/types.ts';
import { metricValues } from './prometheus-text.ts';
import type { ReplicaSet } from './replicas.ts';

const NAMES = [
  'vllm:num_requests_running',
  'vllm:num_requests_waiting',
  'vllm:gpu_cache_usage_perc',
  'preble:queued_prefill_tokens',
  'preble:free_kv_tokens',
  'preble:kv_capacity_tokens',
] as const;

/** The load signal a replica's /metrics text gives (vLLM names; preble engine adds exact token gauges). */
export function loadSignalFrom(text: string, assumedCapacityTokens: number): InstanceLoadSignal | undefined {
  const v = metricValues(text, NAMES);
  if (!v.has('vllm:num_requests_running') && !v.has('vllm:num_requests_waiting')) return undefined;
  const capacity = v.get('preble:kv_capacity_tokens') ?? assumedCapacityTokens;
  const used = Math.round((v.get('vllm:gpu_cache_usage_perc') ?? 0) * capacity);
  return {
    running: v.get('vllm:num_requests_running') ?? 0,
    waiting: v.get('vllm:num_requests_waiting') ?? 0,
    // vLLM does not export queued prefill tokens; without them, 0 leaves the waiting count to speak.
    queuedPrefillTokens: v.get('preble:queued_prefill_tokens') ?? 0,
    usedKvTokens: used,
    freeKvTokens: v.get('preble:free_kv_tokens') ?? Math.max(0, capacity - used),
  };
}

/**
 * Polls every replica's /metrics on an interval and hands the load signals to the policy (sal and
 * polled power-of-two need them). A replica that does not answer is skipped this round.
 */
export class LoadPoller {
  private timer: NodeJS.Timeout | undefined;
  private busy = false;

  constructor(
    private readonly replicas: ReplicaSet,
    private readonly policy: GlobalPolicy,
    private readonly assumedCapacityTokens: number,
    private readonly now: () => number,
  ) {}

  start(intervalSeconds: number): void {
    if (intervalSeconds <= 0) return;
    this.timer = setInterval(() => void this.pollAll(), intervalSeconds * 1000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
  }

  async pollAll(): Promise<void> {
    if (this.busy) return; // a slow round never overlaps the next
    this.busy = true;
    try {
      await Promise.all(
        this.replicas.all().map(async (r) => {
          try {
            const res = await r.pool.request({
              path: '/metrics',
              method: 'GET',
              headersTimeout: 2000,
              bodyTimeout: 2000,
            });
            const text = await res.body.text();
            if (res.statusCode !== 200) return;
            const signal = loadSignalFrom(text, this.assumedCapacityTokens);
            if (signal !== undefined) this.policy.loadSignal(r.id, signal, this.now());
          } catch {
            // Unreachable this round: health checks and breakers decide what that means, not the poller.
          }
        }),
      );
    } finally {
      this.busy = false;
    }
  }
}
