import assert from 'node:assert/strict';
import { test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import type { KvLink, TransferMode } from '../../src/core/fleet/kv-link.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import type { Role } from '../../src/core/types.ts';
import { colocatedOnDisaggregatedFleet, type SimInstance, simulate } from '../../src/sim/simulator.ts';
import { createWorkload } from '../../src/workloads/registry.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { contractViolations, RecordingPolicy } from '../helpers/recording-policy.ts';
import { seq, simpleCostModel } from '../helpers/simple-cost-model.ts';

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
      const journey = [
        r.arrival,
        r.start,
        r.prefillEnd,
        r.transferStart,
        r.transferEnd,
        r.decodeStart,
        r.finish,
      ];
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
  assert.equal(
    colocatedOnDisaggregatedFleet('e2'),
    'policy e2 places requests colocated; a fleet with prefill and decode instances needs a disaggregated policy: distserve, splitwise',
  );
});
