import assert from 'node:assert/strict';
import { test } from 'node:test';
import { aloneLatency } from '../../src/core/cost-model/alone.ts';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { findExperiment } from '../../src/experiments/registry.ts';
import { renderReport } from '../../src/experiments/report.ts';
import { runCells } from '../../src/experiments/runner.ts';
import {
  bestSplit,
  type Findings,
  lengthSource,
  provisioningClaim,
  type SecondToken,
  SPLITWISE_RATES,
  SPLITWISE_REFERENCE_MODEL,
  type SplitSearch,
  searchSplit,
  secondToken,
  sloMisses,
  slowdowns,
  splits,
  splitwiseFleet,
  splitwiseRequests,
  transferClaim,
} from '../../src/experiments/splitwise.ts';
import type { SimRecord } from '../../src/sim/record.ts';

const STAND_INS = { azureCodeTrace: 'stand-in', azureConvTrace: 'stand-in' } as const;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

test('splitwise builds one cell per trace, rate and split on 8 DGX-H100 fleets over 400 Gbps', () => {
  const cells = findExperiment('splitwise').cells({ requests: 10, seed: 0, ...STAND_INS });
  assert.equal(cells.length, 2 * 4 * 7);
  assert.deepEqual(
    splits().map((s) => `${s.prompt}P${s.token}D`),
    ['1P7D', '2P6D', '3P5D', '4P4D', '5P3D', '6P2D', '7P1D'],
  );
  for (const c of cells) {
    assert.equal(c.spec.policy, 'splitwise');
    assert.equal(c.spec.instances, 8);
    assert.match(c.spec.workload, /^stand-in for the Azure (coding|conversation) trace/);
    assert.equal(c.spec.kvTransfer?.mode, 'layer-wise');
    const prompts = c.spec.fleet!.filter((i) => i.role === 'prefill').length;
    assert.equal(c.series, `${prompts}P${8 - prompts}D`);
  }
  assert.deepEqual(
    cells.filter((c) => c.series === '4P4D').map((c) => c.spec.rps),
    [...SPLITWISE_RATES.code, ...SPLITWISE_RATES.conv],
  );
  const fleet = splitwiseFleet({ prompt: 3, token: 5 }, 'serialized');
  assert.deepEqual(
    fleet.instances.map((i) => i.role),
    ['prefill', 'prefill', 'prefill', 'decode', 'decode', 'decode', 'decode', 'decode'],
  );
  assert.equal(fleet.network.class, 'infiniband-400');
  assert.equal(fleet.transferMode, 'serialized');
  assert.notEqual(fleet.nodeOf(0), fleet.nodeOf(1)); // one 8-GPU machine per node
  assert.equal(
    findExperiment('splitwise').cells({ requests: 10, seed: 0, only: ['4P4D'], ...STAND_INS }).length,
    8,
  );
});

test('splitwise: the stand-in has the published medians, Poisson arrivals re-timed with the rate', () => {
  assert.deepEqual(lengthSource('code', 'stand-in'), { trace: 'code' });
  assert.throws(() => lengthSource('conv', '/nonexistent/conv.csv'), /not found/);
  for (const [trace, prompt, output] of [
    ['code', 1500, 13],
    ['conv', 1020, 129],
  ] as const) {
    const at1 = [...splitwiseRequests({ trace }, { requests: 2001, rps: 1, seed: 3 })];
    const at4 = [...splitwiseRequests({ trace }, { requests: 2001, rps: 4, seed: 3 })];
    assert.ok(Math.abs(median(at1.map((r) => r.tokens.length)) / prompt - 1) < 0.1, trace);
    assert.ok(Math.abs(median(at1.map((r) => r.outputTokens)) / output - 1) < 0.15, trace);
    assert.deepEqual(
      at4.map((r) => r.tokens.length),
      at1.map((r) => r.tokens.length),
    );
    for (const [i, r] of at4.entries()) assert.ok(Math.abs(r.arrival * 4 - at1[i]!.arrival) < 1e-9);
  }
});

function record(fields: Partial<SimRecord>): SimRecord {
  return {
    id: 'r',
    workload: 't',
    instance: 0,
    branch: 'prompt-token-pair',
    arrival: 0,
    dispatch: 0,
    start: 0,
    firstToken: -1,
    finish: -1,
    promptTokens: 1000,
    predictedCachedTokens: 0,
    cachedTokens: 0,
    outputTokens: 11,
    decodeInstance: -1,
    prefillEnd: -1,
    transferStart: -1,
    transferEnd: -1,
    decodeStart: -1,
    movedKvTokens: -1,
    movedKvBytes: -1,
    ...fields,
  };
}

test('splitwise: slowdowns against the uncontended DGX-A100 and the nine SLOs of Table VI', () => {
  const reference = costModelPreset(SPLITWISE_REFERENCE_MODEL);
  const alone = aloneLatency(reference, { promptTokens: 1000, outputTokens: 11 });
  assert.ok(alone.ttft > 0 && alone.tbt! > 0);
  assert.ok(Math.abs(alone.e2e - (alone.ttft + 10 * alone.tbt!)) < 1e-12);
  assert.equal(aloneLatency(reference, { promptTokens: 1000, outputTokens: 1 }).tbt, undefined);
  // Twice as slow in every metric: TTFT (2x <= 2x) holds, TBT and E2E (2x > 1.25x) miss at P50 and P90.
  const twice = record({ firstToken: 2 * alone.ttft, finish: 2 * alone.e2e });
  const s = slowdowns([twice], reference);
  assert.ok(
    Math.abs(s.ttft.p50 - 2) < 1e-9 && Math.abs(s.tbt.p99 - 2) < 1e-9 && Math.abs(s.e2e.p90 - 2) < 1e-9,
  );
  assert.deepEqual(
    sloMisses(s).map((m) => m.split(' ').slice(0, 2).join(' ')),
    ['tbt p50', 'tbt p90', 'e2e p50', 'e2e p90'],
  );
  assert.deepEqual(
    sloMisses(slowdowns([record({ firstToken: alone.ttft, finish: alone.e2e })], reference)),
    [],
  );
  // An unfinished request misses everything it has.
  assert.equal(sloMisses(slowdowns([record({})], reference)).length, 9);
});

test('splitwise: the second token counts the gap from the prefill to the token machine, over one TBT', () => {
  const records = [
    // 10 ms transfer, admitted 5 ms later, 10 tokens after the first at 20 ms each.
    record({ prefillEnd: 1, transferEnd: 1.01, decodeStart: 1.015, finish: 1.215 }),
    record({ promptTokens: 100, prefillEnd: 1, transferEnd: 2, decodeStart: 2, finish: 3 }), // small prompt
    record({ outputTokens: 1, prefillEnd: 1, transferEnd: 2, decodeStart: 2, finish: 2 }), // one token
  ];
  const t = secondToken(records);
  assert.equal(t.requests, 1);
  assert.ok(Math.abs(t.exposed - 0.01) < 1e-9);
  assert.ok(Math.abs(t.tbt - 0.02) < 1e-9);
  assert.ok(Math.abs(t.penalty - 0.75) < 1e-9);
  assert.ok(Math.abs(t.transferPenalty - 0.5) < 1e-9);
});

const search = (prompt: number, rps: number): SplitSearch => ({
  split: { prompt, token: 8 - prompt },
  rps,
  bracketed: true,
  probes: [],
});
const token = (penalty: number): SecondToken => ({
  requests: 10,
  exposed: penalty / 100,
  tbt: 0.01,
  penalty,
  transferPenalty: penalty,
});

test('splitwise: the claims are computed from the searches and the transfer runs', () => {
  const transfers = (serialized: number, layerWise: number) =>
    [
      {
        setting: 'light',
        split: { prompt: 1, token: 1 },
        rps: 0.5,
        serialized: token(serialized),
        layerWise: token(layerWise),
      },
    ] as const;
  const findings = (code: number[], conv: number[], layerWise = 0.1): Findings => ({
    code: {
      source: { trace: 'code' },
      searches: code.map((r, i) => search(i + 1, r)),
      transfers: transfers(0.6, layerWise),
    },
    conv: {
      source: { trace: 'conv' },
      searches: conv.map((r, i) => search(i + 1, r)),
      transfers: transfers(0.6, 0.1),
    },
  });
  assert.equal(bestSplit([search(1, 3), search(2, 5), search(3, 5)])?.split.prompt, 2);
  // Coding best 6P2D, conversation best 4P4D: holds.
  const holds = provisioningClaim(findings([1, 2, 3, 4, 5, 9, 7], [1, 2, 3, 9, 5, 6, 7]));
  assert.equal(holds.holds, true);
  assert.match(holds.measured, /coding best 6P2D at 9 rps .*conversation best 4P4D at 9 rps/);
  // Coding best 3P5D (leans to token machines): does not hold.
  assert.equal(provisioningClaim(findings([1, 2, 9, 4, 5, 6, 7], [1, 2, 3, 9, 5, 6, 7])).holds, false);
  // Conversation with fewer token machines than coding: does not hold.
  assert.equal(provisioningClaim(findings([1, 2, 3, 4, 9, 6, 7], [1, 2, 3, 4, 5, 9, 7])).holds, false);
  assert.equal(provisioningClaim({}).holds, false);
  assert.equal(transferClaim(findings([1], [1], 0.1)).holds, true);
  assert.equal(transferClaim(findings([1], [1], 0.4)).holds, false);
  assert.match(transferClaim(findings([1], [1])).measured, /coding, light \(1P1D @ 0.5 rps/);
});

test('splitwise: the split search finds a sustained rate on a tiny stand-in run', () => {
  const result = searchSplit({ source: { trace: 'code' }, requests: 30, seed: 1 }, { prompt: 1, token: 1 });
  assert.ok(result.rps > 0 && result.bracketed);
  assert.ok(result.probes.some((p) => p.rps > result.rps && p.misses.length > 0));
  assert.ok(result.probes.filter((p) => p.rps <= result.rps).every((p) => p.misses.length === 0));
  assert.ok(result.atRate !== undefined);
});

test('splitwise: a tiny end-to-end run gives both claims and the report sections', () => {
  const experiment = findExperiment('splitwise');
  const results = runCells(experiment.cells({ requests: 20, seed: 0, only: ['4P4D'], ...STAND_INS }));
  const claims = experiment.claims?.(results);
  assert.deepEqual(
    claims?.map((c) => c.id),
    ['provisioning-split', 'layer-wise-second-token'],
  );
  for (const c of claims ?? []) assert.ok(c.measured.length > 0 && !c.measured.startsWith('not measured'));
  const { markdown } = renderReport(experiment, results, { command: 'preble experiment splitwise' });
  assert.match(markdown, /## Provisioning search/);
  assert.match(markdown, /## KV transfer: serialized vs layer-wise/);
  assert.match(markdown, /stand-in for the Azure coding trace/);
});
