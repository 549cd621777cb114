import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BatchShape, CostModel } from '../../src/core/cost-model/types.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import { Random } from '../../src/core/random.ts';
import { simulate } from '../../src/sim/simulator.ts';
import { createWorkload } from '../../src/workloads/registry.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';

/** Iteration time linear in the batch's new tokens: a prefill of P tokens takes a + b P. */
function linearModel(kvCapacityTokens: number): CostModel {
  const iterationTime = (b: BatchShape) => (b.requests > 0 ? 0.002 + 0.0001 * b.newTokens : 0);
  return {
    name: 'test-linear',
    iterationTime,
    prefillTime: (n, c) =>
      n > 0 ? iterationTime({ requests: 1, newTokens: n, seqTokens: n + c, newTimesSeq: n * (n + c) }) : 0,
    decodeTime: (k) => k * iterationTime({ requests: 1, newTokens: 1, seqTokens: 1, newTimesSeq: 1 }),
    kvBytesPerToken: 1,
    kvCapacityTokens,
  };
}

/** Poisson arrivals of prompts that share nothing (each starts with its own index), one output token. */
function* unsharedStream(
  count: number,
  rps: number,
  promptTokens: number,
  seed: number,
): Generator<WorkloadRequest> {
  const random = new Random(seed);
  let t = 0;
  for (let n = 0; n < count; n++) {
    t += random.exponential(rps);
    const tokens = new Uint32Array(promptTokens);
    tokens[0] = 1_000_000 + n;
    for (let i = 1; i < promptTokens; i++) tokens[i] = i;
    yield { id: `m${n}`, arrival: t, tokens, outputTokens: 1, workload: 'md1' };
  }
}

for (const utilisation of [0.5, 0.8]) {
  test(`M/D/1 at utilisation ${utilisation}: mean TTFT within 5% of D + R D^2 / (2 (1 - R D))`, () => {
    const prompt = 100;
    const costModel = linearModel(1_000_000);
    const service = costModel.prefillTime(prompt, 0); // D: one iteration, batch of one
    const rate = utilisation / service;
    const result = simulate({
      policy: createGlobalPolicy('round-robin', { costModel }),
      instances: 1,
      costModel,
      engine: { queuePolicy: 'fcfs', maxRunning: 1, chunkedPrefillTokens: 10_000 },
      requests: unsharedStream(60_000, rate, prompt, 11),
    });
    const ttfts = result.records.map((r) => r.firstToken - r.arrival);
    const mean = ttfts.reduce((s, x) => s + x, 0) / ttfts.length;
    const expected = service + (rate * service * service) / (2 * (1 - rate * service));
    const error = Math.abs(mean - expected) / expected;
    assert.ok(
      error < 0.05,
      `mean TTFT ${mean.toFixed(5)} vs M/D/1 ${expected.toFixed(5)}: ${(100 * error).toFixed(1)}% off`,
    );
  });
}

test('conservation: every request finishes once, times are ordered, KV stays within capacity, same seed same bytes', () => {
  const run = () => {
    const costModel = linearModel(6_000); // small memory: evictions and preemptions happen
    let maxUsed = 0;
    const result = simulate({
      policy: createGlobalPolicy('e2', { costModel }),
      instances: 3,
      costModel,
      engine: { queuePolicy: 'fcfs', chunkedPrefillTokens: 512 },
      requests: createWorkload('toolbench', { requests: 400, rps: 20, seed: 5, tools: 20 }),
      onIteration: (_i, _it, engine) => {
        const s = engine.snapshot();
        maxUsed = Math.max(maxUsed, s.usedKvTokens);
        assert.ok(s.usedKvTokens <= s.kvCapacityTokens, 'KV in use within capacity');
      },
    });
    return { result, maxUsed };
  };
  const { result, maxUsed } = run();
  assert.equal(result.records.length, 400);
  assert.equal(new Set(result.records.map((r) => r.id)).size, 400);
  for (const r of result.records) {
    assert.ok(r.arrival <= r.dispatch && r.dispatch <= r.start, `${r.id} dispatch before start`);
    assert.ok(r.start <= r.firstToken && r.firstToken <= r.finish, `${r.id} first token before finish`);
    assert.ok(r.cachedTokens >= 0 && r.cachedTokens <= r.promptTokens);
  }
  assert.ok(maxUsed > 0);
  assert.equal(JSON.stringify(run().result.records), JSON.stringify(result.records), 'deterministic');
});

test('infinite memory, one instance: hit rate equals the share of prompt tokens repeating an earlier prefix', () => {
  const costModel = linearModel(Number.MAX_SAFE_INTEGER);
  const requests = [...createWorkload('toolbench', { requests: 300, rps: 0.2, seed: 9, tools: 12 })];
  // Independent count: each prompt's longest common prefix with any earlier prompt.
  let repeated = 0;
  let total = 0;
  for (let n = 0; n < requests.length; n++) {
    const t = requests[n]!.tokens;
    let best = 0;
    for (let m = 0; m < n; m++) {
      const u = requests[m]!.tokens;
      let k = 0;
      while (k < t.length && k < u.length && t[k] === u[k]) k++;
      if (k > best) best = k;
    }
    repeated += best;
    total += t.length;
  }
  const result = simulate({
    policy: createGlobalPolicy('round-robin', { costModel }),
    instances: 1,
    costModel,
    engine: { queuePolicy: 'fcfs' },
    requests,
  });
  let cached = 0;
  for (const r of result.records) cached += r.cachedTokens;
  // At 0.2 req/s every request finished long before the next arrived, so nothing is missed by timing.
  assert.equal(
    cached,
    repeated,
    `engine cached ${cached} tokens, the prompts repeat ${repeated} of ${total}`,
  );
});
