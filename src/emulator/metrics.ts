import { Counter, Gauge, Registry } from 'prom-client';
import type { Engine } from '../engine/engine.ts';
import type { EngineSnapshot } from '../engine/types.ts';

/**
 * vLLM-named metrics on their own registry, read from the engine's snapshot at scrape time.
 * Counters follow the engine's cumulative totals (which count finished requests).
 */
export function engineMetrics(engine: Engine, model: string): Registry {
  const registry = new Registry();
  const labelNames = ['model_name'] as const;
  const labels = { model_name: model };
  let snap: EngineSnapshot = engine.snapshot();
  const gauge = (name: string, help: string, read: (s: EngineSnapshot) => number, first = false) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        if (first) snap = engine.snapshot();
        this.set(labels, read(snap));
      },
    });
  const counter = (name: string, help: string, read: (s: EngineSnapshot) => number) => {
    let last = 0;
    const c = new Counter({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        const value = read(snap);
        if (value > last) c.inc(labels, value - last);
        last = Math.max(last, value);
      },
    });
    c.inc(labels, 0);
    return c;
  };
  // Registered first, so its collect takes the snapshot the others read.
  gauge('vllm:num_requests_running', 'Requests in the running batch.', (s) => s.running, true);
  gauge('vllm:num_requests_waiting', 'Requests waiting to be admitted.', (s) => s.waiting);
  gauge('vllm:gpu_cache_usage_perc', 'KV-cache usage, 0 to 1.', (s) =>
    s.kvCapacityTokens > 0 ? s.usedKvTokens / s.kvCapacityTokens : 0,
  );
  gauge(
    'preble:queued_prefill_tokens',
    'Uncached prompt tokens still to prefill.',
    (s) => s.queuedPrefillTokens,
  );
  gauge('preble:kv_capacity_tokens', 'KV capacity in tokens.', (s) => s.kvCapacityTokens);
  gauge(
    'preble:free_kv_tokens',
    'KV tokens free for admissions (evictable cache counts as free).',
    (s) => s.freeKvTokens,
  );
  counter('vllm:prompt_tokens_total', 'Prompt tokens processed.', (s) => s.promptTokensTotal);
  counter('vllm:generation_tokens_total', 'Tokens generated.', (s) => s.generationTokensTotal);
  counter(
    'vllm:gpu_prefix_cache_queries_total',
    'Prompt tokens looked up in the prefix cache.',
    (s) => s.promptTokensTotal,
  );
  counter(
    'vllm:gpu_prefix_cache_hits_total',
    'Prompt tokens found in the prefix cache.',
    (s) => s.cachedPromptTokensTotal,
  );
  counter('vllm:num_preemptions_total', 'Requests preempted.', (s) => s.preemptionsTotal);
  return registry;
}
