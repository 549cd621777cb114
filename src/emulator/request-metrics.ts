import { Counter, Histogram, type Registry } from 'prom-client';
import type { FinishedTimings, RequestObserver } from './driver.ts';

// Bucket boundaries of vLLM's V1 Prometheus logger (vllm/v1/metrics/loggers.py), so dashboards and
// quantile queries written for vLLM read the emulator the same way.
export const TTFT_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
  80.0, 160.0, 640.0, 2560.0,
];
export const TPOT_BUCKETS = [
  0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
];
/** Shared by e2e, queue, prefill and decode time. */
export const REQUEST_LATENCY_BUCKETS = [
  0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
  960.0, 1920.0, 7680.0,
];

/** vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to `max` (token-count histograms). */
export function buckets125(max: number): number[] {
  const out: number[] = [];
  for (let scale = 1; ; scale *= 10) {
    for (const m of [1, 2, 5]) {
      if (m * scale > max) return out;
      out.push(m * scale);
    }
  }
}

/** The finish reasons vLLM labels request_success with; the emulator's requests end by length. */
const FINISH_REASONS = ['stop', 'length', 'abort'] as const;

/**
 * vLLM's per-request histograms and request_success counter on `registry`, fed by the driver as
 * requests reach their first token and finish (engine seconds, so they follow --time-scale).
 * `maxModelLen` bounds the token-count buckets, as vLLM's max_model_len does.
 */
export function requestMetrics(registry: Registry, model: string, maxModelLen: number): RequestObserver {
  const labels = { model_name: model };
  // Each series is bound once and zeroed so it is exposed before the first request; observing
  // through the bound child skips re-validating labels per call.
  const histogram = (name: string, help: string, buckets: number[]) => {
    const h = new Histogram({ name, help, buckets, labelNames: ['model_name'], registers: [registry] });
    h.zero(labels);
    return h.labels(labels);
  };
  const ttft = histogram('vllm:time_to_first_token_seconds', 'Time to first token.', TTFT_BUCKETS);
  const tpot = histogram(
    'vllm:time_per_output_token_seconds',
    'Time between consecutive output tokens of a request.',
    TPOT_BUCKETS,
  );
  const e2e = histogram(
    'vllm:e2e_request_latency_seconds',
    'End-to-end latency of finished requests.',
    REQUEST_LATENCY_BUCKETS,
  );
  const queue = histogram(
    'vllm:request_queue_time_seconds',
    'Time finished requests spent waiting before admission.',
    REQUEST_LATENCY_BUCKETS,
  );
  const prefill = histogram(
    'vllm:request_prefill_time_seconds',
    'Time from admission to first token of finished requests.',
    REQUEST_LATENCY_BUCKETS,
  );
  const decode = histogram(
    'vllm:request_decode_time_seconds',
    'Time from first to last token of finished requests.',
    REQUEST_LATENCY_BUCKETS,
  );
  const tokenBuckets = buckets125(Math.max(1, maxModelLen));
  const promptTokens = histogram(
    'vllm:request_prompt_tokens',
    'Prompt tokens of finished requests.',
    tokenBuckets,
  );
  const generationTokens = histogram(
    'vllm:request_generation_tokens',
    'Generated tokens of finished requests.',
    tokenBuckets,
  );
  const success = new Counter({
    name: 'vllm:request_success_total',
    help: 'Requests that ended, by finish reason.',
    labelNames: ['model_name', 'finished_reason'],
    registers: [registry],
  });
  for (const reason of FINISH_REASONS) success.inc({ ...labels, finished_reason: reason }, 0);
  const finishedLength = success.labels({ ...labels, finished_reason: 'length' });
  const finishedAbort = success.labels({ ...labels, finished_reason: 'abort' });

  return {
    firstToken: (seconds) => ttft.observe(seconds),
    nextToken: (seconds) => tpot.observe(seconds),
    finished(t: FinishedTimings) {
      finishedLength.inc();
      e2e.observe(t.e2e);
      queue.observe(t.queue);
      prefill.observe(t.prefill);
      decode.observe(t.decode);
      promptTokens.observe(t.promptTokens);
      generationTokens.observe(t.generationTokens);
    },
    aborted: () => finishedAbort.inc(),
  };
}
