import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import {
  buckets125,
  REQUEST_LATENCY_BUCKETS,
  TPOT_BUCKETS,
  TTFT_BUCKETS,
} from '../../src/emulator/request-metrics.ts';
import { MODEL, metricSamples, metricValue, type Running, startServer, waitFor } from './helpers.ts';

const TIMINGS = [
  'vllm:time_to_first_token_seconds',
  'vllm:time_per_output_token_seconds',
  'vllm:e2e_request_latency_seconds',
  'vllm:request_queue_time_seconds',
  'vllm:request_prefill_time_seconds',
  'vllm:request_decode_time_seconds',
];
const TOKENS = ['vllm:request_prompt_tokens', 'vllm:request_generation_tokens'];

async function scrape(s: Running): Promise<string> {
  return (await fetch(`${s.url}/metrics`)).text();
}

function successes(text: string, reason: string): number {
  const sample = metricSamples(text, 'vllm:request_success_total').find(
    (x) => x.labels['finished_reason'] === reason,
  );
  assert.ok(sample, reason);
  assert.equal(sample.labels['model_name'], MODEL);
  return sample.value;
}

/** A histogram's buckets are cumulative, end at +Inf = count, and use the given bounds. */
function assertHistogram(text: string, name: string, bounds: readonly number[]): void {
  const buckets = metricSamples(text, `${name}_bucket`);
  assert.deepEqual(
    buckets.map((b) => b.labels['le']),
    [...bounds.map(String), '+Inf'],
    name,
  );
  for (const b of buckets) assert.equal(b.labels['model_name'], MODEL);
  for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, name);
  assert.equal(buckets.at(-1)!.value, metricValue(text, `${name}_count`), name);
}

describe('preble engine: vLLM request histograms', () => {
  let s: Running;
  before(async () => {
    s = await startServer();
  });
  after(async () => {
    await s.close();
  });

  it('exposes every histogram at zero with vLLM bucket boundaries before any request', async () => {
    const text = await scrape(s);
    for (const name of [...TIMINGS, ...TOKENS]) {
      assert.equal(metricValue(text, `${name}_count`), 0, name);
      assert.equal(metricValue(text, `${name}_sum`), 0, name);
    }
    assertHistogram(text, 'vllm:time_to_first_token_seconds', TTFT_BUCKETS);
    assertHistogram(text, 'vllm:time_per_output_token_seconds', TPOT_BUCKETS);
    for (const name of TIMINGS.slice(2)) assertHistogram(text, name, REQUEST_LATENCY_BUCKETS);
    const tokenBounds = buckets125(s.server.driver.engine.kvCapacityTokens);
    for (const name of TOKENS) assertHistogram(text, name, tokenBounds);
    for (const reason of ['stop', 'length', 'abort']) assert.equal(successes(text, reason), 0);
  });

  it('observes each finished request once, with counts and sums that add up', async () => {
    const before = await scrape(s);
    const grew = (text: string, name: string) => metricValue(text, name) - metricValue(before, name);
    const prompts = ['first prompt', 'a second, longer prompt', 'third'];
    const maxTokens = [5, 9, 1];
    await Promise.all(
      prompts.map((prompt, i) =>
        s.client.completions.create({ model: MODEL, prompt, max_tokens: maxTokens[i]! }),
      ),
    );
    const stream = await s.client.completions.create({
      model: MODEL,
      prompt: 'streamed',
      max_tokens: 6,
      stream: true,
    });
    for await (const _ of stream);
    prompts.push('streamed');
    maxTokens.push(6);

    const text = await scrape(s);
    const n = prompts.length;
    for (const name of [...TIMINGS.filter((t) => !t.includes('per_output')), ...TOKENS]) {
      assert.equal(grew(text, `${name}_count`), n, name);
    }
    const generated = maxTokens.reduce((a, b) => a + b, 0);
    assert.equal(grew(text, 'vllm:time_per_output_token_seconds_count'), generated - n);
    assert.equal(grew(text, 'vllm:request_generation_tokens_sum'), generated);
    assert.equal(
      grew(text, 'vllm:request_prompt_tokens_sum'),
      prompts.reduce((a, p) => a + p.length, 0),
    );
    assert.equal(successes(text, 'length') - successes(before, 'length'), n);

    // The breakdown is consistent: ttft = queue + prefill, e2e = ttft + decode, decode = sum of gaps.
    const sum = (name: string) => grew(text, `${name}_sum`);
    const close = (a: number, b: number, what: string) =>
      assert.ok(Math.abs(a - b) < 1e-6, `${what}: ${a} ${b}`);
    close(
      sum('vllm:time_to_first_token_seconds'),
      sum('vllm:request_queue_time_seconds') + sum('vllm:request_prefill_time_seconds'),
      'ttft',
    );
    close(
      sum('vllm:e2e_request_latency_seconds'),
      sum('vllm:time_to_first_token_seconds') + sum('vllm:request_decode_time_seconds'),
      'e2e',
    );
    close(sum('vllm:request_decode_time_seconds'), sum('vllm:time_per_output_token_seconds'), 'decode');
    for (const name of TIMINGS) assert.ok(sum(name) >= 0, name);
    assert.ok(sum('vllm:request_prefill_time_seconds') > 0);
    // Engine seconds, not wall seconds: every gap spans at least one iteration of the cost model
    // (tens of ms), where at 1000x its wall time is tens of microseconds.
    const step = costModelPreset(MODEL).iterationTime({
      requests: 1,
      newTokens: 1,
      seqTokens: 1,
      newTimesSeq: 1,
    });
    assert.ok(sum('vllm:time_per_output_token_seconds') >= (generated - n) * step);
  });

  it('measures engine time: the same request gives the same timings at any time scale', async () => {
    const near = (a: number, b: number, what: string) =>
      assert.ok(Math.abs(a - b) < 1e-9, `${what}: ${a} ${b}`);
    const runs = await Promise.all([1, 1000].map((timeScale) => timingsOnVirtualClock(timeScale)));
    for (const run of runs) {
      const [prefillStep = 0, ...decodeSteps] = run.steps;
      const decodeTotal = decodeSteps.reduce((a, b) => a + b, 0);
      assert.equal(decodeSteps.length, 4);
      near(run.metric('vllm:request_queue_time_seconds'), 0, 'queue');
      near(run.metric('vllm:time_to_first_token_seconds'), prefillStep, 'ttft');
      near(run.metric('vllm:request_prefill_time_seconds'), prefillStep, 'prefill');
      near(run.metric('vllm:request_decode_time_seconds'), decodeTotal, 'decode');
      near(run.metric('vllm:time_per_output_token_seconds'), decodeTotal, 'inter-token');
      near(run.metric('vllm:e2e_request_latency_seconds'), prefillStep + decodeTotal, 'e2e');
    }
    assert.equal(runs[0]!.steps.length, runs[1]!.steps.length);
    runs[0]!.steps.forEach((step, i) => {
      near(step, runs[1]!.steps[i]!, `step ${i}`);
    });
  });

  it('counts a request the client abandons as an abort, not as a finished request', async () => {
    // Real time, so the request is certainly still running when the client leaves.
    const slow = await startServer({ timeScale: 1 });
    try {
      await abandon(slow);
    } finally {
      await slow.close();
    }
  });
});

async function abandon(s: Running): Promise<void> {
  const before = await scrape(s);
  const controller = new AbortController();
  const res = await fetch(`${s.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, prompt: 'abandoned', max_tokens: 4096, stream: true }),
    signal: controller.signal,
  });
  await res.body!.getReader().read();
  controller.abort();
  await waitFor(() => s.server.driver.inFlight === 0, 'the abort');
  const text = await scrape(s);
  assert.equal(successes(text, 'abort') - successes(before, 'abort'), 1);
  assert.equal(successes(text, 'length'), successes(before, 'length'));
  assert.equal(
    metricValue(text, 'vllm:e2e_request_latency_seconds_count'),
    metricValue(before, 'vllm:e2e_request_latency_seconds_count'),
  );
}

/**
 * One 5-token request alone on a server whose wall clock moves only when an iteration's timer fires
 * (by exactly its delay): returns the iterations' engine durations and the histogram sums.
 */
async function timingsOnVirtualClock(
  timeScale: number,
): Promise<{ steps: number[]; metric: (name: string) => number }> {
  let wall = 0;
  const steps: number[] = [];
  const s = await startServer({
    timeScale,
    clock: () => wall,
    schedule: (callback, delayMs) => {
      const timer = setImmediate(() => {
        wall += delayMs / 1000;
        steps.push((delayMs / 1000) * timeScale);
        callback();
      });
      return { cancel: () => clearImmediate(timer) };
    },
  });
  try {
    await s.client.completions.create({ model: MODEL, prompt: 'virtual time', max_tokens: 5 });
    const text = await scrape(s);
    return { steps, metric: (name) => metricValue(text, `${name}_sum`) };
  } finally {
    await s.close();
  }
}
