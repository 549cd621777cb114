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
  readonly attempts = new Counter({
    name: 'preble_upstream_attempts_total',
    help: 'Upstream attempts by replica and outcome (ok, client_error, replica_error, timeout, client_closed)',
    labelNames: ['replica', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly resends = new Counter({
    name: 'preble_upstream_resends_total',
    help: 'Generation requests and prefill legs sent again to the same replica because the kept-alive connection closed before any answer (not a replica fault)',
    labelNames: ['replica'] as const,
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'preble_retries_total',
    help: 'Requests sent again to another replica after a replica fault, before anything reached the client',
    registers: [this.registry],
  });
  readonly refused = new Counter({
    name: 'preble_refused_total',
    help: 'Requests the gateway answered itself with an error, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly replicaUp = new Gauge({
    name: 'preble_replica_up',
    help: '1 while the replica is in the routing view (healthy, breaker not open), else 0',
    labelNames: ['replica'] as const,
    registers: [this.registry],
  });
  readonly breakerOpens = new Counter({
    name: 'preble_breaker_open_total',
    help: 'Times a replica left the routing view (breaker opened or health checks failed)',
    labelNames: ['replica'] as const,
    registers: [this.registry],
  });
  readonly queued = new Gauge({
    name: 'preble_admission_queued_requests',
    help: 'Requests waiting for admission',
    registers: [this.registry],
  });
  readonly promptTokens = new Counter({
    name: 'preble_replica_prompt_tokens_total',
    help: 'Prompt tokens replicas reported',
    labelNames: ['replica'] as const,
    registers: [this.registry],
  });
  readonly evictions = new Counter({
    name: 'preble_replica_evictions_total',
    help: "Evictions told to the policy, by source: kv_events (the replica's KV events) or cached_tokens (a response cached less than the policy believed)",
    labelNames: ['replica', 'source'] as const,
    registers: [this.registry],
  });
  readonly pdPrefill = new Histogram({
    name: 'preble_pd_prefill_seconds',
    help: 'Prefill/decode disaggregation: the prefill leg, from dispatch to its answer (KV ready)',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [this.registry],
  });
  readonly pdTransfer = new Histogram({
    name: 'preble_pd_kv_transfer_seconds',
    help: 'Prefill/decode disaggregation: the KV transfer as the decode replica reports it (preble engine: preble_timing.kv_transfer_ms)',
    buckets: [0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly pdDecodeTtft = new Histogram({
    name: 'preble_pd_decode_ttft_seconds',
    help: 'Prefill/decode disaggregation: the decode leg, from its dispatch to its first token (KV transfer and adoption included)',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10],
    registers: [this.registry],
  });
  readonly pdRecomputes = new Counter({
    name: 'preble_pd_recomputes_total',
    help: 'Prefill/decode disaggregation: decode legs that computed the prompt themselves because the KV could not be handed off (llama.cpp: slot save or restore failed), by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly pdLegRetries = new Counter({
    name: 'preble_pd_leg_retries_total',
    help: 'Prefill/decode disaggregation: legs run again, by leg (prefill: on another prefill replica or because the KV was gone; decode: with the same KV)',
    labelNames: ['leg'] as const,
    registers: [this.registry],
  });
  readonly adviceReplicas = new Gauge({
    name: 'preble_advice_replicas',
    help: 'Live advice: replicas the planner recommends for the traffic seen, by model and role (docs/gateway.md, Live advice)',
    labelNames: ['model', 'role'] as const,
    registers: [this.registry],
  });
  readonly adviceArrivalRate = new Gauge({
    name: 'preble_advice_arrival_rate',
    help: "Live advice: arrivals per second over the advice window, by model (the policy's clock)",
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  readonly adviceCapacity = new Gauge({
    name: 'preble_advice_capacity_rps',
    help: 'Live advice: simulated capacity of one replica of the cost model under the advice SLOs, by model and role',
    labelNames: ['model', 'role'] as const,
    registers: [this.registry],
  });
}
