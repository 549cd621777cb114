import assert from 'node:assert/strict';
import { test } from 'node:test';
import { aloneLatency } from '../../src/core/cost-model/alone.ts';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { buildFleet } from '../../src/core/fleet/fleet.ts';
import { parseFleetConfig } from '../../src/core/fleet/spec.ts';
import { belowFloor, latencyFloor, specFloor } from '../../src/experiments/latency-floor.ts';
import { steadyLatency } from '../../src/experiments/paired-comparison.ts';
import { runChunkTokens, runSimulation } from '../../src/sim/run.ts';
import { createWorkload } from '../../src/workloads/registry.ts';

const a6000 = costModelPreset('mistral-7b-a6000');
const h100 = costModelPreset('llama2-7b-h100');

const req = (id: string, arrival: number, tokens: number[], outputTokens = 10) => ({
  id,
  arrival,
  tokens: Uint32Array.from(tokens),
  outputTokens,
  workload: 't',
});

test('latencyFloor: each request alone with every earlier prompt cached; the warm-up fills the cache but is not counted', () => {
  const shared = Array.from({ length: 3000 }, (_, i) => i + 1);
  const stream = [req('a', 0, [...shared, 7]), req('b', 5, [...shared, 8, 9]), req('c', 6, [1, 2, 3])];
  const floor = latencyFloor(stream, [a6000], 512, 1);
  assert.deepEqual([...floor.byId.keys()], ['b', 'c'], 'a arrived in the warm-up');
  // b finds a's 3,000 shared tokens cached: only its last two are computed.
  const b = aloneLatency(a6000, {
    promptTokens: 3002,
    cachedTokens: 3000,
    outputTokens: 10,
    chunkTokens: 512,
  });
  assert.equal(floor.byId.get('b'), b.e2e);
  // c shares [1, 2] with the earlier prompts.
  const c = aloneLatency(a6000, { promptTokens: 3, cachedTokens: 2, outputTokens: 10, chunkTokens: 512 });
  assert.equal(
    floor.byId.get('c'),
    Math.min(c.e2e, aloneLatency(a6000, { promptTokens: 3, outputTokens: 10, chunkTokens: 512 }).e2e),
  );
  assert.ok(Math.abs(floor.latency.mean - (floor.byId.get('b')! + floor.byId.get('c')!) / 2) < 1e-12);
  // The fastest of several models sets it.
  const mixed = latencyFloor(stream, [a6000, h100], 512, 1);
  assert.ok(mixed.latency.mean < floor.latency.mean);
  assert.throws(() => latencyFloor(stream, [], 512), /no cost model/);
});

test("latencyFloor: no policy beats it on a simulated run (beyond the fitted costs' steps), and belowFloor finds one that does", () => {
  const requests = () => createWorkload('video-qa', { requests: 200, rps: 1, seed: 3, instances: 2 });
  const floor = latencyFloor(requests(), [a6000], 512);
  for (const policy of ['round-robin', 'e2', 'e2-plus', 'cache-aware']) {
    const { report, result } = runSimulation({
      policy,
      workload: 'video-qa',
      instances: 2,
      rps: 1,
      costModel: a6000,
      requests,
      seed: 3,
    });
    const run = steadyLatency(result.records, 0);
    assert.ok(
      report.latency.mean >= floor.latency.mean,
      `${policy}: ${report.latency.mean} < ${floor.latency.mean}`,
    );
    assert.ok(
      belowFloor(floor, run).worstShortfall < 0.01,
      `${policy}: ${belowFloor(floor, run).worstShortfall}`,
    );
  }
  const id = [...floor.byId.keys()][0]!;
  const faster = belowFloor(floor, { ids: [id], latency: [floor.byId.get(id)! * 0.9] });
  assert.equal(faster.count, 1);
  assert.ok(Math.abs(faster.worstShortfall - 0.1) < 1e-12);
});

test("specFloor prefills in the run's chunks: the run's budget, else its policy's, else the engine's", () => {
  const spec = {
    policy: 'round-robin',
    workload: 't',
    instances: 1,
    rps: 1,
    costModel: a6000,
    requests: () => [
      req(
        'a',
        0,
        Array.from({ length: 5000 }, (_, i) => i + 1),
        2,
      ),
    ],
    seed: 0,
  };
  const chunked = (chunk: number) =>
    aloneLatency(a6000, { promptTokens: 5000, outputTokens: 2, chunkTokens: chunk }).e2e;
  assert.equal(runChunkTokens(spec), 512);
  assert.equal(specFloor(spec).byId.get('a'), chunked(512));
  assert.equal(specFloor({ ...spec, chunkTokens: 256 }).byId.get('a'), chunked(256));
  assert.equal(runChunkTokens({ ...spec, policy: 'splitwise' }), 2048);
});

test('specFloor on a fleet: the fastest of its GPU models, each priced once however many instances share it', () => {
  const stream = [
    req(
      'a',
      0,
      Array.from({ length: 4000 }, (_, i) => i + 1),
      20,
    ),
    req('b', 1, [1, 2, 9], 5),
  ];
  const fleet = buildFleet(
    parseFleetConfig({
      instances: [
        { role: 'mixed', count: 3, model: 'mistral-7b-a6000' },
        { role: 'mixed', count: 2, model: 'llama2-7b-h100' },
      ],
    }),
  );
  const floor = specFloor({
    policy: 'round-robin',
    workload: 't',
    instances: 5,
    fleet: fleet.instances,
    rps: 1,
    costModel: a6000,
    requests: () => stream,
    seed: 0,
  });
  assert.deepEqual(floor.byId, latencyFloor(stream, [a6000, h100], 512).byId);
  assert.ok(floor.latency.mean < latencyFloor(stream, [a6000], 512).latency.mean, 'the H100 is faster');
});
