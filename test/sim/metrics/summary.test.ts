import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { perInstance } from '../../../src/sim/metrics/per-instance.ts';
import type { RequestRecord } from '../../../src/sim/metrics/record.ts';
import { summarize } from '../../../src/sim/metrics/summary.ts';

function record(fields: Partial<RequestRecord> & Pick<RequestRecord, 'id' | 'instance'>): RequestRecord {
  return {
    workload: 'test',
    arrival: 0,
    dispatch: 0,
    start: 0,
    firstToken: 1,
    finish: 2,
    promptTokens: 100,
    cachedTokens: 0,
    outputTokens: 2,
    ...fields,
  };
}

// Times are multiples of 1/4 so that every expected number below is exact in binary.
const records: RequestRecord[] = [
  record({
    id: 'a',
    instance: 0,
    arrival: 0,
    firstToken: 0.5,
    finish: 2.5,
    promptTokens: 100,
    cachedTokens: 0,
    outputTokens: 5,
  }),
  record({
    id: 'b',
    instance: 1,
    arrival: 1,
    firstToken: 2,
    finish: 3,
    promptTokens: 200,
    cachedTokens: 100,
    outputTokens: 3,
  }),
  record({
    id: 'c',
    instance: 0,
    arrival: 2,
    firstToken: 2.25,
    finish: 2.25,
    promptTokens: 50,
    cachedTokens: 50,
    outputTokens: 1,
  }),
  record({
    id: 'd',
    instance: 1,
    arrival: 3,
    firstToken: 7,
    finish: 8,
    promptTokens: 400,
    cachedTokens: 0,
    outputTokens: 2,
  }),
  // Never finished: counted by the SLO (as a miss) and per instance, nowhere else.
  record({
    id: 'e',
    instance: 2,
    arrival: 4,
    start: -1,
    firstToken: -1,
    finish: -1,
    promptTokens: 1000,
    cachedTokens: 0,
  }),
];

describe('summarize', () => {
  it('computes latency, TTFT, TPOT and normalized TTFT over completed requests', () => {
    const summary = summarize(records);
    assert.equal(summary.completed, 4);
    // Latencies 2.5, 2, 0.25, 5.
    assert.deepEqual(summary.latency, { mean: 9.75 / 4, p50: 2, p90: 5, p99: 5 });
    // TTFTs 0.5, 1, 0.25, 4.
    assert.deepEqual(summary.ttft, { mean: 5.75 / 4, p50: 0.5, p90: 4, p99: 4 });
    // TPOTs 2/4, 1/2, (c has one output token), 1/1.
    assert.deepEqual(summary.tpot, { mean: 2 / 3, p50: 0.5, p90: 1, p99: 1 });
    // TTFT / prompt: 0.005, 0.005, 0.005, 0.01.
    assert.equal(summary.normalizedTtft.p50, 0.5 / 100);
    assert.equal(summary.normalizedTtft.p99, 4 / 400);
  });

  it('leaves a warm-up out of the latency and hit-rate figures, not out of throughput', () => {
    // Arrivals before 1.5 s (a, b) are warm-up: latencies 0.25 (c) and 5 (d) remain.
    const summary = summarize(records, { warmupSeconds: 1.5 });
    assert.equal(summary.completed, 4);
    assert.equal(summary.warmupExcluded, 2);
    assert.equal(summary.latency.mean, 5.25 / 2);
    assert.equal(summary.cacheHitRate, 50 / 450);
    assert.equal(summary.throughputRps, 0.5);
    assert.equal(summarize(records).warmupExcluded, undefined);
    assert.throws(() => summarize(records, { warmupSeconds: -1 }), /warmupSeconds/);
  });

  it('computes the cache hit rate and throughput', () => {
    const summary = summarize(records);
    assert.equal(summary.cacheHitRate, 150 / 750);
    // 4 completed from the first arrival (0) to the last finish (8).
    assert.equal(summary.throughputRps, 0.5);
    assert.equal(summarize(records, { durationSeconds: 16 }).throughputRps, 0.25);
    assert.equal(summary.sloAttainment, undefined);
  });

  it('counts SLO attainment over all records, unfinished ones missing', () => {
    const { sloAttainment } = summarize(records, { slo: { ttft: 1, tpot: 0.5 } });
    // TTFT <= 1: a, b, c. TPOT <= 0.5: a, b, c (trivially). Both: a, b, c. Out of 5.
    assert.deepEqual(sloAttainment, { ttft: 0.6, tpot: 0.6, both: 0.6 });
    const strict = summarize(records, { slo: { ttft: 0.5, tpot: 1 } }).sloAttainment;
    // TTFT <= 0.5: a, c. TPOT <= 1: a, b, c, d. Both: a, c.
    assert.deepEqual(strict, { ttft: 0.4, tpot: 0.8, both: 0.4 });
  });

  it('summarizes nothing as zeros', () => {
    const empty = summarize([], { slo: { ttft: 1, tpot: 1 } });
    assert.equal(empty.completed, 0);
    assert.deepEqual(empty.latency, { mean: 0, p50: 0, p90: 0, p99: 0 });
    assert.equal(empty.cacheHitRate, 0);
    assert.equal(empty.throughputRps, 0);
    assert.deepEqual(empty.sloAttainment, { ttft: 0, tpot: 0, both: 0 });
  });
});

describe('perInstance', () => {
  it('counts routed requests, busy fraction and cache hits per instance, idle ones included', () => {
    assert.deepEqual(perInstance(records, [4, 2, 0, 1], 8), [
      { requests: 2, busyFraction: 0.5, cacheHitRate: 50 / 150 },
      { requests: 2, busyFraction: 0.25, cacheHitRate: 100 / 600 },
      { requests: 1, busyFraction: 0, cacheHitRate: 0 },
      { requests: 0, busyFraction: 0.125, cacheHitRate: 0 },
    ]);
  });

  it('covers instances the busy list lacks, and a zero duration', () => {
    assert.deepEqual(
      perInstance(records, [], 0).map((i) => [i.requests, i.busyFraction]),
      [
        [2, 0],
        [2, 0],
        [1, 0],
      ],
    );
  });
});
