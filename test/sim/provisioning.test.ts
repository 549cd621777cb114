import assert from 'node:assert/strict';
import { test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { buildFleet } from '../../src/core/fleet/fleet.ts';
import { parseFleetConfig } from '../../src/core/fleet/spec.ts';
import { Random } from '../../src/core/random.ts';
import { runSimulation, type SimSpec } from '../../src/sim/run.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';

// A provisioner in the simulator (docs/provisioning.md): rising traffic adds workers after their
// start-up delay, falling traffic removes them, and the GPU-seconds add up from the fleet log.

const MODEL = 'llama2-7b-h100';

/** Poisson arrivals at `rate(t)`, prompts of 200-600 tokens and outputs of 20-60, seeded. */
function stream(rate: (t: number) => number, until: number, seed: number): WorkloadRequest[] {
  const random = new Random(seed);
  const out: WorkloadRequest[] = [];
  let t = 0;
  for (let i = 0; t < until; i++) {
    t += -Math.log(1 - random.next()) / rate(t);
    if (t >= until) break;
    const tokens = Uint32Array.from({ length: random.int(200, 600) }, (_, k) => i * 1000 + k);
    out.push({ id: `q${i}`, arrival: t, tokens, outputTokens: random.int(20, 60), workload: 'test' });
  }
  return out;
}

function spec(requests: WorkloadRequest[], startupSeconds: number): SimSpec {
  const fleet = buildFleet(
    parseFleetConfig({ instances: [{ role: 'mixed', count: 1, model: MODEL, tensorParallel: 1 }] }),
  );
  return {
    policy: 'aladdin',
    workload: 'test',
    instances: 1,
    fleet: fleet.instances,
    rps: 0,
    costModel: costModelPreset(MODEL),
    requests: () => requests,
    seed: 1,
    slo: { ttft: 0.5, tpot: 0.05 },
    // One worker per 10 requests/s (a given Eq. 7 line), a 5 s heartbeat.
    provisioner: {
      choice: { name: 'aladdin', options: { heartbeatSeconds: 5, k5: 0.1, c5: 0 } },
      startupSeconds,
    },
  };
}

test('rising rate adds workers after the start-up delay, falling rate removes them; GPU-seconds add up', () => {
  // 5 rps for 20 s, 40 rps for 20 s, 5 rps for 30 s.
  const requests = stream((t) => (t < 20 || t >= 40 ? 5 : 40), 70, 3);
  const { report, result } = runSimulation(spec(requests, 4));
  assert.equal(report.completed, requests.length);
  const log = result.fleetLog.filter((e) => e.by === 'provisioner');
  const added = log.filter((e) => e.event === 'added');
  const removed = log.filter((e) => e.event === 'removed');
  assert.ok(added.length >= 2, `added ${added.length}`);
  assert.ok(removed.length >= 2, `removed ${removed.length}`);
  // Adds come in the high-rate phase (decided at a heartbeat in it, ready 4 s later), removals after it.
  assert.ok(
    added.every((e) => e.at > 20 && e.at <= 49),
    `adds at ${added.map((e) => e.at)}`,
  );
  assert.ok(
    removed.some((e) => e.at > 40),
    'removals after the peak',
  );
  // Nothing routed to a removed instance after its removal; every engine ends empty.
  for (const e of removed) {
    assert.ok(result.records.every((r) => r.instance !== e.instance || r.dispatch <= e.at));
    assert.equal(result.engines[e.instance]!.usedKvTokens, 0);
  }
  const p = report.provisioning!;
  assert.equal(p.added, added.length);
  assert.equal(p.removed, removed.length);
  // GPU-seconds by hand: one GPU per instance, from the start (an add: its decision, 4 s before it
  // was ready) to its removal or the end.
  const start = result.records[0]!.arrival;
  const end = start + result.durationSeconds;
  let byHand = 0;
  for (let i = 0; i < result.engines.length; i++) {
    const add = added.find((e) => e.instance === i);
    const from = add === undefined ? start : add.at - 4;
    const to = removed.find((e) => e.instance === i)?.at ?? end;
    byHand += Math.max(0, Math.min(end, to) - from);
  }
  assert.ok(Math.abs(p.gpuSeconds - byHand) < 1e-6, `${p.gpuSeconds} vs ${byHand}`);
  assert.ok(p.meanGpus >= 1 && p.meanGpus <= p.peakInstances);
  assert.ok(p.peakInstances >= 3);
});

test('a longer start-up delay holds fewer ready workers through the peak and costs its wait', () => {
  const requests = stream((t) => (t < 10 ? 5 : 40), 30, 4);
  const fast = runSimulation(spec(requests, 0)).report;
  const slow = runSimulation(spec(requests, 15)).report;
  const firstAdd = (r: typeof fast) => r.fleetLog?.find((e) => e.event === 'added')?.at ?? Number.NaN;
  assert.ok(firstAdd(slow) - firstAdd(fast) >= 15 - 1e-9);
  assert.ok(slow.ttft.p99 >= fast.ttft.p99);
});
