import assert from 'node:assert/strict';
import { test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import type { KvLink, TransferMode } from '../../src/core/fleet/kv-link.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import type { Role } from '../../src/core/types.ts';
import type { EngineKvUsage } from '../../src/engine/engine.ts';
import { journeyMarks } from '../../src/sim/record.ts';
import { journeyStages } from '../../src/sim/run.ts';
import {
  colocatedOnDisaggregatedFleet,
  type SimInstance,
  type SimulatorOptions,
  simulate,
} from '../../src/sim/simulator.ts';
import { createWorkload } from '../../src/workloads/registry.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { contractViolations, RecordingPolicy } from '../helpers/recording-policy.ts';
import { concat, seq, simpleCostModel } from '../helpers/simple-cost-model.ts';

/** Every instance on its own node, joined by `link` (the node link is never used). */
const placement = (link: KvLink) => ({ nodeOf: (i: number) => i, nodeLink: link, network: link });

const close = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual}, expected ${expected}`);

test('1P1D by hand: prefill, KV transfer over a fixed link, decode; the journey timestamps add up', () => {
  // Simple cost model: 1 ms per new token (a decode step is 1 ms per request), 1 KV byte per token.
  // Link: 10 ms latency, 1000 bytes/s, so 100 tokens of KV take 0.01 + 0.1 = 0.11 s.
  const link: KvLink = { class: 'emulated', bandwidth: 1000, latency: 0.01 };
  const costModel = simpleCostModel();
  const requests: WorkloadRequest[] = [
    { id: 'a', workload: 'hand', tokens: seq(100, 1), arrival: 0, outputTokens: 3 },
    { id: 'b', workload: 'hand', tokens: seq(200, 1000), arrival: 1, outputTokens: 2 },
  ];
  const result = simulate({
    policy: createGlobalPolicy('distserve', { costModel }),
    instances: 2,
    costModel,
    fleet: [
      { costModel, role: 'prefill' },
      { costModel, role: 'decode' },
    ],
    engine: { queuePolicy: 'fcfs' },
    kvTransfer: { placement: placement(link), mode: 'serialized' },
    requests,
  });
  const [a, b] = result.records;
  // a: prefill [0, 0.1] (first token at its end); KV 100 tokens: [0.1, 0.21]; two decode steps of 1 ms.
  close(a!.start, 0, 'a prefill start');
  close(a!.prefillEnd, 0.1, 'a prefill end');
  close(a!.firstToken, 0.1, 'a first token');
  close(a!.transferStart, 0.1, 'a transfer start');
  close(a!.transferEnd, 0.21, 'a transfer end');
  close(a!.decodeStart, 0.21, 'a decode start');
  close(a!.finish, 0.212, 'a finish');
  assert.equal(a!.instance, 0);
  assert.equal(a!.decodeInstance, 1);
  assert.equal(a!.outputTokens, 3);
  // b: prefill [1, 1.2]; KV 200 tokens: 0.01 + 0.2 = 0.21 s, [1.2, 1.41]; one decode step.
  close(b!.start, 1, 'b prefill start');
  close(b!.firstToken, 1.2, 'b first token');
  close(b!.transferEnd - b!.transferStart, 0.21, 'b transfer seconds');
  close(b!.decodeStart, 1.41, 'b decode start');
  close(b!.finish, 1.411, 'b finish');
  assert.equal(b!.branch, 'prefill-shortest-queue');
});

/** 1P1D over a 10 ms, 1000 B/s link, the simple cost model (1 ms per new token, 1 KV byte per token). */
const run1P1D = (
  requests: WorkloadRequest[],
  mode: TransferMode = 'serialized',
  onIteration?: SimulatorOptions['onIteration'],
) => {
  const link: KvLink = { class: 'emulated', bandwidth: 1000, latency: 0.01 };
  const costModel = simpleCostModel();
  return simulate({
    policy: createGlobalPolicy('distserve', { costModel }),
    instances: 2,
    costModel,
    fleet: [
      { costModel, role: 'prefill' },
      { costModel, role: 'decode' },
    ],
    engine: { queuePolicy: 'fcfs' },
    kvTransfer: { placement: placement(link), mode },
    requests,
    ...(onIteration === undefined ? {} : { onIteration }),
  });
};

test('only uncached KV moves: a prompt prefix the decode instance caches stays there', () => {
  // a and b share a 400-token prefix; a's prompt is cached on the decode instance once it ran there.
  const shared = seq(400, 1);
  const requests: WorkloadRequest[] = [
    { id: 'a', workload: 'hand', tokens: concat(shared, seq(100, 5000)), arrival: 0, outputTokens: 3 },
    { id: 'b', workload: 'hand', tokens: concat(shared, seq(200, 9000)), arrival: 2, outputTokens: 3 },
  ];
  for (const mode of ['serialized', 'layer-wise', 'pull'] as const) {
    const usage: EngineKvUsage[] = [];
    const result = run1P1D(requests, mode, (instance, _iteration, engine) => {
      if (instance === 1) usage.push(engine.kvUsage());
    });
    const [a, b] = result.records;
    // a: prefill [0, 0.5]; nothing cached on decode: 500 tokens, 0.01 + 500 / 1000 = 0.51 s (one layer:
    // layer-wise's residue is the whole transfer); two decode steps.
    close(a!.prefillEnd, 0.5, `${mode} a prefill end`);
    close(a!.transferEnd - a!.transferStart, 0.51, `${mode} a transfer`);
    close(a!.finish, 1.012, `${mode} a finish`);
    // b: the prefill instance caches the 400 shared tokens too: prefill [2, 2.2]. The decode instance
    // caches them: only the other 200 move, 0.01 + 200 / 1000 = 0.21 s (not 0.61), then two decode steps.
    close(b!.start, 2, `${mode} b prefill start`);
    close(b!.prefillEnd, 2.2, `${mode} b prefill end`);
    close(b!.transferStart, 2.2, `${mode} b transfer start`);
    close(b!.transferEnd, 2.41, `${mode} b transfer end`);
    close(b!.decodeStart, 2.41, `${mode} b decode start`);
    close(b!.finish, 2.412, `${mode} b finish`);
    // The decode engine's accounting after each of its iterations (a's two decode steps, b's two): a's
    // prompt and the KV of its 2 decoded tokens end up cached; b's adoption adds only its 200 uncached
    // prompt tokens to the cache (pinning its 600), plus 1 private token per decode step until it ends.
    assert.deepEqual(
      usage.map((u) => [u.cacheTokens, u.pinnedTokens, u.privateTokens]),
      [
        [500, 500, 1],
        [502, 0, 0],
        [702, 600, 1],
        [704, 0, 0],
      ],
      mode,
    );
    assert.equal(result.engines[1]!.usedKvTokens, 0, `${mode}: nothing pinned at the end`);
    assert.deepEqual([a!.cachedTokens, b!.cachedTokens], [0, 400], `${mode}: the prefill legs' hits`);
  }
});

test('the five-stage journey, by hand: queue, prefill, pull wait, transfer, decode queue, decode', () => {
  // Three 100-token requests at 0 on 1P1D, pull mode, over the 10 ms, 1000 B/s link (100 tokens: 0.11 s);
  // the decode instance holds 150 tokens of KV: one request's KV (+1 for its next token) at a time.
  // a: its arrival starts the prefill instance's first iteration alone: prefill [0, 0.1]; pulled at once
  //    (the decode instance is idle), KV on it at 0.21; two decode steps of 1 ms: finish 0.212.
  // b, c: queued 0.1, prefilled together (200 tokens) [0.1, 0.3]. b is pulled at 0.3 (a's cached KV is
  //    evictable: 150 free), KV at 0.41, finish 0.412. c's 100 do not fit beside b's in transit (50 left):
  //    it waits, and is pulled when b finishes at 0.412: KV at 0.522, finish 0.524.
  const costModel = simpleCostModel(150);
  const link: KvLink = { class: 'emulated', bandwidth: 1000, latency: 0.01 };
  const requests: WorkloadRequest[] = ['a', 'b', 'c'].map((id, i) => ({
    id,
    workload: 'hand',
    tokens: seq(100, 1000 * i),
    arrival: 0,
    outputTokens: 3,
  }));
  const result = simulate({
    policy: createGlobalPolicy('distserve', { costModel }),
    instances: 2,
    costModel,
    fleet: [
      { costModel: simpleCostModel(), role: 'prefill' },
      { costModel, role: 'decode' },
    ],
    engine: { queuePolicy: 'fcfs' },
    kvTransfer: { placement: placement(link), mode: 'pull' },
    requests,
  });
  const journeys = result.records.map((r) => [
    r.start,
    r.prefillEnd,
    r.transferStart,
    r.transferEnd,
    r.decodeStart,
    r.finish,
  ]);
  const expected = [
    [0, 0.1, 0.1, 0.21, 0.21, 0.212],
    [0.1, 0.3, 0.3, 0.41, 0.41, 0.412],
    [0.1, 0.3, 0.412, 0.522, 0.522, 0.524],
  ];
  for (const [i, j] of journeys.entries())
    for (const [k, t] of j.entries()) close(t, expected[i]![k]!, `${'abc'[i]} mark ${k}`);

  const stages = journeyStages(result.records)!;
  const want = {
    prefillQueue: [(0 + 0.1 + 0.1) / 3, 0.1],
    prefill: [(0.1 + 0.2 + 0.2) / 3, 0.2],
    transferWait: [(0 + 0 + 0.112) / 3, 0.112],
    transfer: [0.11, 0.11],
    decodeQueue: [0, 0],
    decode: [0.002, 0.002],
  } as const;
  assert.deepEqual(Object.keys(stages), Object.keys(want));
  for (const [name, [mean, p99]] of Object.entries(want)) {
    close(stages[name as keyof typeof want].mean, mean, `${name} mean`);
    close(stages[name as keyof typeof want].p99, p99, `${name} p99`);
  }
  // The stage means add up to the mean latency.
  const latency = result.records.reduce((s, r) => s + r.finish - r.arrival, 0) / 3;
  close(
    Object.values(stages).reduce((s, x) => s + x.mean, 0),
    latency,
    'stage means against mean latency',
  );
  // A colocated run has no stages.
  const colocated = simulate({
    policy: createGlobalPolicy('least-load', { costModel }),
    instances: 1,
    costModel: simpleCostModel(),
    requests,
  });
  assert.equal(journeyStages(colocated.records), undefined);
});

const pdFleet = (roles: readonly Role[], kvCapacityTokens: number): SimInstance[] => {
  const costModel = costModelPreset('mistral-7b-a6000', { kvCapacityTokens });
  return roles.map((role) => ({ costModel, role }));
};

const runPd = (
  mode: TransferMode,
  policy = createGlobalPolicy('distserve', { costModel: simpleCostModel() }),
) => {
  const fleet = pdFleet(['prefill', 'prefill', 'decode', 'decode'], 40_000);
  const link: KvLink = { class: 'infiniband-200', bandwidth: 25e9, latency: 10e-6 };
  return simulate({
    policy,
    instances: fleet.length,
    costModel: fleet[0]!.costModel,
    fleet,
    engine: { queuePolicy: 'fcfs' },
    kvTransfer: { placement: placement(link), mode },
    requests: createWorkload('video-qa', { requests: 60, rps: 4, seed: 3 }),
  });
};

test('a disaggregated run gives the policy the contract feedback in order, and leaves every engine empty', () => {
  for (const mode of ['serialized', 'layer-wise', 'pull'] as const) {
    const policy = new RecordingPolicy(createGlobalPolicy('distserve', { costModel: simpleCostModel() }));
    const result = runPd(mode, policy);
    assert.equal(result.records.length, 60);
    let disaggregated = 0;
    for (const r of result.records) {
      assert.deepEqual(contractViolations(policy.of(r.id)), [], `${mode} ${r.id}`);
      assert.ok(r.finish >= 0, `${mode} ${r.id} finished`);
      if (r.decodeInstance < 0) continue;
      disaggregated++;
      assert.ok(r.instance < 2 && r.decodeInstance >= 2, `${r.id}: prefill on P, decode on D`);
      const journey = journeyMarks(r);
      for (let i = 1; i < journey.length; i++)
        assert.ok(journey[i]! >= journey[i - 1]!, `${mode} ${r.id}: journey ${journey.join(' ')}`);
      assert.equal(r.firstToken, r.prefillEnd);
    }
    assert.ok(disaggregated > 50, `${mode}: ${disaggregated} disaggregated`);
    for (const [i, s] of result.engines.entries()) {
      assert.equal(s.heldKvTokens, 0, `${mode}: engine ${i} holds KV`);
      assert.equal(
        s.heldRequests + s.running + s.waiting + s.adoptWaiting,
        0,
        `${mode}: engine ${i} has requests`,
      );
    }
    const methods = new Set(policy.calls.map((c) => c.method));
    for (const m of ['kvReady', 'routeDecode', 'kvArrived', 'requestFinished'])
      assert.ok(methods.has(m as never), `${mode}: never called ${m}`);
  }
});

test('a disaggregated run is deterministic', () => {
  assert.deepEqual(runPd('pull').records, runPd('pull').records);
});

test('a colocated policy on a fleet with prefill and decode instances fails with one line', () => {
  const fleet = pdFleet(['prefill', 'decode'], 40_000);
  const link: KvLink = { class: 'emulated', bandwidth: 1e9, latency: 0 };
  for (const policy of [
    createGlobalPolicy('least-load', { costModel: simpleCostModel() }),
    // Wrapped, it looks disaggregated (it forwards routeDecode): its first decision is refused instead.
    new RecordingPolicy(createGlobalPolicy('e2', { costModel: fleet[0]!.costModel })),
  ]) {
    assert.throws(
      () =>
        simulate({
          policy,
          instances: 2,
          costModel: fleet[0]!.costModel,
          fleet,
          kvTransfer: { placement: placement(link), mode: 'serialized' },
          requests: createWorkload('video-qa', { requests: 3, rps: 4, seed: 3 }),
        }),
      { message: colocatedOnDisaggregatedFleet(policy.name) },
    );
  }
  assert.match(
    colocatedOnDisaggregatedFleet('e2'),
    /^policy e2 places requests colocated; a fleet with prefill and decode instances needs a disaggregated policy: distserve, splitwise, prefix-pd(, [a-z-]+)*$/,
  );
});
