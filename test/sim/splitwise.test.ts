import assert from 'node:assert/strict';
import { test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import type { KvLink, TransferMode } from '../../src/core/fleet/kv-link.ts';
import type { SplitwisePolicy } from '../../src/core/policies/disagg/splitwise.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import type { Role } from '../../src/core/types.ts';
import { type SimInstance, simulate } from '../../src/sim/simulator.ts';
import { createWorkload } from '../../src/workloads/registry.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { contractViolations, RecordingPolicy } from '../helpers/recording-policy.ts';
import { seq, simpleCostModel } from '../helpers/simple-cost-model.ts';

/** Every instance on its own node, joined by `link`. */
const placement = (link: KvLink) => ({ nodeOf: (i: number) => i, nodeLink: link, network: link });

const close = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual}, expected ${expected}`);

test('splitwise P+D+M by hand: serialized KV below 512 prompt tokens, layer-wise above, the mixed pool past the prompt threshold', () => {
  // Simple cost model: prefill 1 ms per token; 1 KV byte per token, 10 layers. Link: 10 ms, 1000 B/s.
  const costModel = simpleCostModel();
  const link: KvLink = { class: 'emulated', bandwidth: 1000, latency: 0.01 };
  const fleet: SimInstance[] = (['prefill', 'decode', 'mixed'] as const).map((role) => ({
    costModel,
    role,
    layers: 10,
  }));
  const requests: WorkloadRequest[] = [
    { id: 'a', workload: 'hand', tokens: seq(100, 1), arrival: 0, outputTokens: 2 },
    { id: 'b', workload: 'hand', tokens: seq(600, 1000), arrival: 1, outputTokens: 2 },
    { id: 'c', workload: 'hand', tokens: seq(700, 5000), arrival: 1, outputTokens: 2 },
  ];
  const result = simulate({
    policy: createGlobalPolicy('splitwise', { costModel }, { promptQueueTokens: 1000 }),
    instances: fleet.length,
    costModel,
    fleet,
    // The fleet says pull: splitwise's per-request modes override it.
    engine: { queuePolicy: 'fcfs', chunkedPrefillTokens: 2048 },
    kvTransfer: { placement: placement(link), mode: 'pull' },
    requests,
  });
  const [a, b, c] = result.records;
  // a, 100 tokens: serialized. Prefill [0, 0.1]; KV 0.01 + 100/1000 = 0.11 s after it.
  assert.deepEqual([a!.instance, a!.decodeInstance, a!.branch], [0, 1, 'prompt-token-pair']);
  close(a!.prefillEnd, 0.1, 'a prefill end');
  close(a!.transferEnd, 0.21, 'a transfer end');
  // b, 600 tokens: layer-wise. Prefill [1, 1.6]; bytes 0.6 s over 10 layers of 0.06 s: the link keeps
  // up, the residue is the last layer's 0.06 s plus the 0.01 s latency (serialized would be 0.61 s).
  assert.deepEqual([b!.instance, b!.decodeInstance, b!.branch], [0, 1, 'prompt-token-pair']);
  close(b!.prefillEnd, 1.6, 'b prefill end');
  close(b!.transferEnd - b!.transferStart, 0.07, 'b transfer residue');
  // c arrives with b: prompt machine 0 would queue 600 + 700 > 1000 tokens: colocated on the mixed
  // instance, prefill [1, 1.7], no transfer.
  assert.deepEqual([c!.instance, c!.decodeInstance, c!.branch], [2, -1, 'mixed-pool']);
  close(c!.firstToken, 1.7, 'c first token');
  assert.equal(c!.transferStart, -1);
  for (const r of result.records) assert.ok(r.finish > r.firstToken, `${r.id} finished`);
});

/**
 * `roles` (by default P, P, D, D, M) under `requests` (by default 80 video-qa ones over the earlier
 * fixed 32 videos: the stream this test was written against, every prompt fits 40k), engines checked
 * at every iteration.
 */
const runMixedFleet = (
  mode: TransferMode,
  policy: RecordingPolicy,
  roles: Role[] = ['prefill', 'prefill', 'decode', 'decode', 'mixed'],
  requests: Iterable<WorkloadRequest> = createWorkload('video-qa', {
    requests: 80,
    rps: 8,
    seed: 5,
    activeVideos: 32,
  }),
) => {
  const costModel = costModelPreset('mistral-7b-a6000', { kvCapacityTokens: 40_000 });
  const fleet: SimInstance[] = roles.map((role) => ({ costModel, role, layers: 32 }));
  const link: KvLink = { class: 'infiniband-200', bandwidth: 25e9, latency: 10e-6 };
  return simulate({
    policy,
    instances: fleet.length,
    costModel,
    fleet,
    engine: { queuePolicy: 'fcfs', chunkedPrefillTokens: 2048 },
    kvTransfer: { placement: placement(link), mode },
    requests,
    onIteration: (_i, _it, engine) => engine.checkInvariants(),
  });
};

test('splitwise on P, P, D, D, M: the contract feedback in order, both pools used, every queue and engine empty at the end', () => {
  for (const mode of ['serialized', 'pull'] as const) {
    const inner = createGlobalPolicy(
      'splitwise',
      { costModel: simpleCostModel() },
      { promptQueueTokens: 4096, borrow: false },
    ) as SplitwisePolicy;
    const policy = new RecordingPolicy(inner);
    const result = runMixedFleet(mode, policy);
    assert.equal(result.records.length, 80);
    const branches = new Map<string, number>();
    for (const r of result.records) {
      assert.deepEqual(contractViolations(policy.of(r.id)), [], `${mode} ${r.id}`);
      assert.ok(r.finish >= 0, `${mode} ${r.id} finished`);
      branches.set(r.branch, (branches.get(r.branch) ?? 0) + 1);
      if (r.branch === 'mixed-pool') {
        assert.equal(r.instance, 4);
        assert.equal(r.decodeInstance, -1);
      } else if (r.decodeInstance >= 0) {
        assert.ok(r.instance < 2 && r.decodeInstance >= 2 && r.decodeInstance < 4, `${r.id}: P then D`);
      }
    }
    assert.ok((branches.get('prompt-token-pair') ?? 0) > 0, `${mode}: pairs`);
    assert.ok((branches.get('mixed-pool') ?? 0) > 0, `${mode}: mixed pool`);
    for (let i = 0; i < 5; i++) {
      assert.equal(inner.promptQueueTokens(i), 0, `${mode}: prompt queue of ${i}`);
      assert.equal(inner.decodeQueueTokens(i), 0, `${mode}: decode queue of ${i}`);
      assert.equal(inner.inflight(i), 0, `${mode}: in flight on ${i}`);
    }
    for (const [i, s] of result.engines.entries())
      assert.equal(s.heldRequests + s.running + s.waiting + s.adoptWaiting + s.heldKvTokens, 0, `${i}`);
  }
});

test('splitwise on P, P, D, D (no mixed pool): a burst past the prompt threshold borrows a token machine, runs colocated work there and gives it back when it drains; deterministic', () => {
  const run = () => {
    const inner = createGlobalPolicy(
      'splitwise',
      { costModel: simpleCostModel() },
      { promptQueueTokens: 4096 },
    ) as SplitwisePolicy;
    const policy = new RecordingPolicy(inner);
    // 24 prompts of 1,500 tokens within 0.12 s, then 8 small ones after the burst.
    const requests: WorkloadRequest[] = [
      ...Array.from({ length: 24 }, (_, k) => ({
        id: `burst${k}`,
        workload: 'hand',
        tokens: seq(1500, 10_000 * (k + 1)),
        arrival: k * 0.005,
        outputTokens: 20,
      })),
      ...Array.from({ length: 8 }, (_, k) => ({
        id: `late${k}`,
        workload: 'hand',
        tokens: seq(200, 500_000 + 1000 * k),
        arrival: 30 + k,
        outputTokens: 5,
      })),
    ];
    const result = runMixedFleet('serialized', policy, ['prefill', 'prefill', 'decode', 'decode'], requests);
    return { result, policy, inner };
  };
  const { result, policy, inner } = run();
  const colocated = result.records.filter((r) => r.branch === 'borrowed' || r.branch === 'mixed-pool');
  assert.ok(
    result.records.some((r) => r.branch === 'borrowed'),
    'a machine was borrowed',
  );
  for (const r of colocated) {
    assert.ok(r.instance === 2 || r.instance === 3, `${r.id} ran on a borrowed token machine`);
    assert.equal(r.decodeInstance, -1, `${r.id} ran whole`);
  }
  // Borrowed (role mixed, asked by the policy), then given back (role decode) and settled there.
  const lent = result.fleetLog.filter((e) => e.event === 'role' && e.role === 'mixed');
  assert.ok(lent.length > 0);
  for (const e of lent) {
    assert.equal(e.by, 'policy');
    const back = result.fleetLog.find(
      (f) => f.instance === e.instance && f.at >= e.at && f.event === 'role-settled' && f.role === 'decode',
    );
    assert.ok(back !== undefined, `instance ${e.instance} went back to the token pool`);
  }
  assert.deepEqual(inner.borrowedMachines(), []);
  // After the burst drained, the late requests run as pairs again.
  for (const r of result.records.filter((r) => r.id.startsWith('late')))
    assert.equal(r.branch, 'prompt-token-pair', r.id);
  for (const r of result.records) {
    assert.ok(r.finish >= 0, `${r.id} finished`);
    assert.deepEqual(contractViolations(policy.of(r.id)), [], r.id);
  }
  for (let i = 0; i < 4; i++) assert.equal(inner.inflight(i), 0);
  for (const s of result.engines) assert.equal(s.running + s.waiting + s.adoptWaiting + s.heldRequests, 0);
  const again = run().result;
  assert.deepEqual(again.records, result.records);
  assert.deepEqual(again.fleetLog, result.fleetLog);
});

test("splitwise's mixed instances run splitwise-mixed (prompts first), the others fcfs; --queue-policy overrides", async () => {
  const { buildFleet, parseFleetShorthand } = await import('../../src/core/fleet/index.ts');
  const { fleetRun, runSimulation } = await import('../../src/sim/run.ts');
  const fleet = buildFleet(parseFleetShorthand('2P2D2M', 'mistral-7b-a6000'));
  const workload = 'synthetic:in=1024,out=64';
  const preemptions = (queuePolicy: 'auto' | 'fcfs') =>
    runSimulation({
      policy: 'splitwise',
      workload,
      ...fleetRun(fleet, 8192),
      rps: 14,
      costModel: costModelPreset('mistral-7b-a6000', { kvCapacityTokens: 8192 }),
      requests: () => createWorkload(workload, { requests: 300, rps: 14, seed: 0 }),
      seed: 0,
      queuePolicy,
    }).result.engines.map((e) => e.preemptionsTotal);
  const mixed = preemptions('auto');
  assert.deepEqual(mixed.slice(0, 4), [0, 0, 0, 0]);
  assert.ok(mixed[4]! + mixed[5]! > 0, `mixed instances preempt for prompts: ${mixed}`);
  assert.deepEqual(preemptions('fcfs'), [0, 0, 0, 0, 0, 0]);
});
