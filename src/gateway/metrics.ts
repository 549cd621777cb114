import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The gateway's Prometheus metrics, on a registry of its own. */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'preble_requests_total',
    help: 'Requests answered, by route, policy branch and outcome',
    labelNames: ['route', 'branch', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: 'preble_request_latency_seconds',
    help: 'End-to-end latency of completed requests',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly ttft = new Histogram({
    name: 'preble_ttft_seconds',
    help: 'Time to first token of streamed requests',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [this.registry],
  });
  readonly matchRate = new Histogram({
    name: 'preble_prefix_match_rate',
    help: 'Share of each prompt the policy expected to find cached on the replica it chose',
    buckets: [0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1],
    registers: [this.registry],
  });
  readonly inflight = new Gauge({
    name: 'preble_replica_inflight_requests',
    help: 'Requests in flight per replica, as the router counts them',
    labelNames: ['replica'] as const,
    registers: [this.registry],
  });
  readonly cachedTokens = new Counter({
    name: 'preble_replica_cached_prompt_tokens_total',
    help: 'Prompt tokens replicas reported as served from their cache',
    labelNames: ['replica'] as const,
    registers: [this.registry],
  });
  readonly promptTokens = new Counter({
    name: 'preble_replica_prompt_tokens_total',
    help: 'Prompt tokens replicas reported',
    labelNames: ['replica'] as const,
    registers: [this.registry],
  });
}
