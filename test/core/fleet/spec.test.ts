import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  buildFleet,
  FLEET_DEFAULTS,
  FleetSpecError,
  fleetCostPerHour,
  fleetGpuCount,
  fleetPowerWatts,
  INSTANCE_SPEC_DEFAULTS,
  linkBetween,
  parseFleetConfig,
  perGpu,
} from '../../../src/core/fleet/index.ts';

function fails(raw: unknown, field: string, reason: RegExp, defaultModel?: string): void {
  assert.throws(
    () => buildFleet(parseFleetConfig(raw, defaultModel === undefined ? {} : { defaultModel })),
    (error: unknown) => {
      assert.ok(error instanceof FleetSpecError, String(error));
      assert.equal(error.field, field);
      assert.match(error.reason, reason);
      assert.equal(error.message.includes('\n'), false, 'one line');
      return true;
    },
  );
}

test('a spec with only a model takes every default; the fleet takes its defaults', () => {
  const config = parseFleetConfig({ instances: [{ model: 'mistral-7b-a6000' }] });
  assert.deepEqual(config.instances, [{ ...INSTANCE_SPEC_DEFAULTS, model: 'mistral-7b-a6000' }]);
  assert.deepEqual(INSTANCE_SPEC_DEFAULTS, {
    role: 'mixed',
    pipelineParallel: 1,
    queuePolicy: 'auto',
    count: 1,
  });
  const { instances: _, links, ...rest } = config;
  assert.deepEqual(rest, FLEET_DEFAULTS);
  assert.deepEqual(FLEET_DEFAULTS, {
    network: 'infiniband-200',
    nodeLink: 'nvlink',
    gpusPerNode: 8,
    transferMode: 'serialized',
  });
  assert.deepEqual(links, {});
});

test('a field given as undefined keeps its default (the withDefaults idiom); a bare list is the instances', () => {
  const config = parseFleetConfig([{ model: 'mistral-7b-a6000', count: undefined, role: undefined }]);
  assert.equal(config.instances[0]!.count, 1);
  assert.equal(config.instances[0]!.role, 'mixed');
  assert.equal(
    parseFleetConfig({ instances: [{}] }, { defaultModel: 'llama2-7b-h100' }).instances[0]!.model,
    'llama2-7b-h100',
  );
});

test('specs expand by count into instances 0..N-1 in order, with their resolved model', () => {
  const fleet = buildFleet(
    parseFleetConfig({
      instances: [
        { role: 'prefill', model: 'llama2-7b-h100', count: 2, chunkTokens: 1024 },
        { role: 'decode', model: 'llama3-8b', gpu: 'h100', tensorParallel: 2, maxRunning: 64 },
      ],
    }),
  );
  assert.deepEqual(
    fleet.instances.map((i) => [i.id, i.role, i.specIndex, i.costModel, i.gpus]),
    [
      [0, 'prefill', 0, 'llama2-7b-h100', 1],
      [1, 'prefill', 0, 'llama2-7b-h100', 1],
      [2, 'decode', 1, 'roofline:llama3-8b@h100-80gx2', 2],
    ],
  );
  const [first, , decode] = fleet.instances;
  assert.equal(first!.chunkTokens, 1024);
  assert.equal(first!.maxRunning, undefined);
  assert.equal(decode!.maxRunning, 64);
  assert.equal(first!.kvBytesPerToken, 2 * 32 * 32 * 128 * 2); // Llama-2-7B: no GQA
  assert.equal(decode!.kvBytesPerToken, 2 * 32 * 8 * 128 * 2); // Llama-3-8B: 8 KV heads
  assert.equal(decode!.layers, 32);
  assert.equal(decode!.gpu, 'h100-80g');
});

test('a preset brings its GPU and tensor parallelism; agreeing values are accepted', () => {
  const [inst] = buildFleet(
    parseFleetConfig([{ model: 'llama3-70b-h100', gpu: 'h100', tensorParallel: 4, pipelineParallel: 2 }]),
  ).instances;
  assert.equal(inst!.tensorParallel, 4);
  assert.equal(inst!.gpus, 8);
  assert.equal(inst!.model, 'llama3-70b');
});

test('prices: the spec wins, else GPUs x the listed GPU price (Splitwise Table I), else unknown', () => {
  const fleet = buildFleet(
    parseFleetConfig([
      { model: 'llama3-70b-h100' }, // 4 x $38/8
      { model: 'roofline:llama3-8b@a100' }, // 1 x $17.6/8
      { model: 'llama2-7b-h100', pricePerHour: 3 },
    ]),
  );
  assert.deepEqual(
    fleet.instances.map((i) => i.pricePerHour),
    [4 * 4.75, 2.2, 3],
  );
  assert.equal(fleetGpuCount(fleet.instances), 6);
  assert.ok(Math.abs(fleetCostPerHour(fleet.instances)! - 24.2) < 1e-12);
  assert.equal(fleetPowerWatts(fleet.instances), 5 * 700 + 400);
  assert.equal(perGpu(12, fleet.instances), 2);
  // Every catalog GPU has a listed price now; the CPU stand-in has none.
  const cpu = buildFleet(parseFleetConfig([{ model: 'llamacpp-small-cpu', count: 2 }])).instances;
  assert.equal(cpu[0]!.pricePerHour, undefined);
  assert.equal(fleetCostPerHour(cpu), undefined);
  assert.equal(fleetPowerWatts(cpu), undefined);
  assert.equal(fleetGpuCount(cpu), 2);
});

test('instances fill nodes of gpusPerNode GPUs in order; the link follows the nodes', () => {
  const fleet = buildFleet(
    parseFleetConfig({
      gpusPerNode: 4,
      network: 'ethernet-25g',
      links: { 'ethernet-25g': { bandwidth: 1e9 } },
      instances: [
        { role: 'prefill', model: 'llama2-7b-h100', count: 3 },
        { role: 'decode', model: 'llama3-8b', gpu: 'h100', tensorParallel: 2, count: 2 },
        { model: 'llama3-70b-h100', pipelineParallel: 2 }, // 8 GPUs: two whole nodes
        { role: 'decode', model: 'llama2-7b-h100' },
      ],
    }),
  );
  assert.deepEqual(
    fleet.instances.map((i) => fleet.nodeOf(i.id)),
    [0, 0, 0, 1, 1, 2, 4], // 3 x 1 GPU | 2 + 2 GPUs | 8 GPUs on nodes 2-3 | 1 GPU,
  );
  assert.equal(linkBetween(fleet, 0, 2)?.class, 'nvlink');
  assert.deepEqual(linkBetween(fleet, 0, 3), { class: 'ethernet-25g', bandwidth: 1e9, latency: 50e-6 });
  assert.equal(linkBetween(fleet, 3, 3), null);
  assert.throws(() => fleet.nodeOf(7), /no instance 7/);
});

test('every error names its field in one line', () => {
  fails('x', '', /expected a mapping with `instances`, or a list of instance specs/);
  fails({ instances: [] }, 'instances', /at least one instance spec/);
  fails(
    { instances: [{ model: 'llama2-7b-h100' }], netwrk: 'nvlink' },
    'netwrk',
    /unknown field \(valid: instances, network/,
  );
  fails(
    [{ model: 'llama2-7b-h100', tp: 2 }],
    'instances.0.tp',
    /unknown field \(valid: role, model, gpu, tensorParallel/,
  );
  fails(
    [{ model: 'llama2-7b-h100', role: 'both' }],
    'instances.0.role',
    /expected one of "mixed"\|"prefill"\|"decode"/,
  );
  fails([{ model: 'llama2-7b-h100', count: 0 }], 'instances.0.count', /expected number to be >0/);
  fails([{ model: 'llama2-7b-h100', tensorParallel: 1.5 }], 'instances.0.tensorParallel', /expected int/);
  fails(
    [{ model: 'llama2-7b-h100', queuePolicy: 'sjf' }],
    'instances.0.queuePolicy',
    /"auto"\|"fcfs"\|"lpm"/,
  );
  fails(
    [{ model: 'llama2-7b-h100', pricePerHour: -1 }],
    'instances.0.pricePerHour',
    /expected number to be >=0/,
  );
  fails(
    [{ model: 'llama2-7b-h100', chunkTokens: '512' }],
    'instances.0.chunkTokens',
    /expected number, received string/,
  );
  fails([{ role: 'mixed' }], 'instances.0.model', /required \(the run names no model\)/);
  fails([{ model: 'gpt-9' }], 'instances.0.model', /unknown cost-model preset "gpt-9".*or a bare model name/);
  fails([{ model: 'llama3-8b' }], 'instances.0.gpu', /required with a bare model name \('llama3-8b'\)/);
  fails([{ model: 'llama3-8b', gpu: 'tpu' }], 'instances.0.gpu', /unknown GPU 'tpu'; valid: a6000/);
  fails([{ model: 'llama3-70b', gpu: 'a6000' }], 'instances.0.tensorParallel', /does not fit on 1 x a6000/);
  fails(
    [{ model: 'llama3-70b-h100', gpu: 'a100' }],
    'instances.0.gpu',
    /'a100' differs from llama3-70b-h100's h100-80g/,
  );
  fails(
    [{ model: 'llama3-70b-h100', tensorParallel: 2 }],
    'instances.0.tensorParallel',
    /2 differs from llama3-70b-h100's 4/,
  );
  fails(
    [{ role: 'prefill', model: 'llama2-7b-h100' }],
    'instances',
    /with prefill instances needs decode instances/,
  );
  fails(
    [{ role: 'decode', model: 'llama2-7b-h100' }, { model: 'llama2-7b-h100' }],
    'instances',
    /needs prefill/,
  );
  fails({ instances: [{ model: 'llama2-7b-h100' }], network: 'wifi' }, 'network', /expected one of "nvlink"/);
  fails(
    { instances: [{ model: 'llama2-7b-h100' }], transferMode: 'push' },
    'transferMode',
    /"serialized"\|"layer-wise"\|"pull"/,
  );
  fails(
    { instances: [{ model: 'llama2-7b-h100' }], links: { wifi: {} } },
    'links.wifi',
    /unknown field \(valid: nvlink,/,
  );
  fails(
    { instances: [{ model: 'llama2-7b-h100' }], links: { nvlink: { bandwidth: 0 } } },
    'links.nvlink.bandwidth',
    />0/,
  );
  fails(
    { instances: [{ model: 'llama2-7b-h100' }], links: { nvlink: { gbps: 1 } } },
    'links.nvlink.gbps',
    /valid: bandwidth, latency/,
  );
  fails({ instances: [{ model: 'llama2-7b-h100' }], gpusPerNode: 0 }, 'gpusPerNode', />0/);
});
