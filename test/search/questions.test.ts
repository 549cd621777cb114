import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { planAladdinHere } from '../../src/search/aladdin.ts';
import { noCache } from '../../src/search/cache.ts';
import { HELPERS, type PhaseConfiguration, planDistServeHere } from '../../src/search/distserve.ts';
import type { Evaluated } from '../../src/search/evaluated.ts';
import type { PlanRequest } from '../../src/search/request.ts';
import { planSplitwise } from '../../src/search/splitwise.ts';

const request: PlanRequest = {
  base: { workload: 'synthetic:in=256,out=16', requests: 40, seed: 0, slo: { ttft: 0.5, tpot: 0.05 } },
  criterion: { kind: 'slo', target: 0.9 },
  space: {
    model: 'llama3-8b',
    gpus: ['a100', 'h100'],
    tensorParallel: [1],
    pipelineParallel: [1],
    maxRunning: [16],
    chunkTokens: [512],
    queuePolicies: ['fcfs'],
    policies: ['round-robin'],
    layouts: [{ kind: 'colocated', replicas: 1 }],
  },
  relativeTolerance: 0.2,
};

describe('the distserve question', () => {
  test('one best configuration per phase, replicas = ceil(rate / goodput), the fleet checked at the rate', () => {
    const plan = planDistServeHere({ ...request, rate: 6 }, noCache);
    assert.equal(plan.configurations, 4);
    const phases = plan.details?.phases as { phase: string; goodput: number; replicas: number }[];
    assert.deepEqual(
      phases.map((p) => p.phase),
      ['prefill', 'decode'],
    );
    for (const p of phases) assert.equal(p.replicas, Math.ceil(6 / p.goodput - 1e-9));
    assert.ok(plan.best?.verification !== undefined);
    const roles = plan.best.instances.map((i) => [i.role, i.count]);
    assert.deepEqual(
      roles,
      phases.map((p) => [p.phase, p.replicas]),
    );
  });
});

describe('the splitwise question', () => {
  test('every grid point spends the budget, the colocated baseline competes', async () => {
    const plan = await planSplitwise(
      request,
      { budget: 'cost', machines: 3 },
      { threads: 0, cache: noCache },
    );
    const details = plan.details as {
      budget: { value: number };
      grid: { costPerHour: number; prompt: number; token: number }[];
    };
    assert.ok(Math.abs(details.budget.value - 3 * 2.2) < 1e-9);
    assert.ok(details.grid.length > 0);
    for (const g of details.grid) {
      assert.ok(g.costPerHour <= details.budget.value + 1e-9);
      assert.ok(g.costPerHour + 2.2 > details.budget.value, 'another A100 machine would fit');
    }
    assert.equal(plan.configurations, details.grid.length + 1);
    assert.ok(plan.best !== undefined);
  });
});

describe('the aladdin question', () => {
  test('workers = ceil(rate / capacity per worker) for every GPU x TP, aladdin on one colocated worker', () => {
    const plan = planAladdinHere(
      { ...request, rate: 6, space: { ...request.space, tensorParallel: [1, 2] } },
      noCache,
    );
    assert.equal(plan.question, 'aladdin');
    assert.equal(plan.configurations, 4);
    for (const e of plan.evaluated) assert.equal(e.scenario.policy, 'aladdin');
    const sizing = plan.details?.sizing as {
      capacityPerWorker: number;
      workers: number;
      gpusPerWorker: number;
      gpus: number;
    }[];
    assert.ok(sizing.length > 0);
    for (const w of sizing) {
      assert.equal(w.workers, Math.ceil(6 / w.capacityPerWorker - 1e-9));
      assert.equal(w.gpus, w.workers * w.gpusPerWorker);
    }
    // Ranked by the GPUs the workers take.
    for (let i = 1; i < sizing.length; i++) assert.ok(sizing[i - 1]!.gpus <= sizing[i]!.gpus);
    assert.ok(plan.best?.verification !== undefined, 'the chosen fleet simulated at the rate');
  });

  test('needs a target rate', () => {
    assert.throws(() => planAladdinHere(request, noCache), /--question aladdin sizes workers for a rate/);
  });
});

describe('the distserve question, helpers', () => {
  // Long prompts, short answers: one decode instance outruns three prefill instances.
  const decodeHeavy: PlanRequest = {
    ...request,
    base: {
      ...request.base,
      workload: 'synthetic:in=1024,out=32',
      minSeconds: 2,
      slo: { ttft: 0.3, tpot: 0.05 },
    },
    space: { ...request.space, gpus: ['h100'], maxRunning: [32] },
  };
  const helpersOf = (e: Evaluated) => (e.configuration as PhaseConfiguration).helpers;

  test('a decode goodput is measured only up to what its feeders sustain, with more feeders until bracketed', () => {
    const plan = planDistServeHere(decodeHeavy, noCache, { maxHelpers: 8 });
    const prefill = plan.evaluated.filter((e) => (e.configuration as PhaseConfiguration).phase === 'prefill');
    const decode = plan.evaluated.filter((e) => (e.configuration as PhaseConfiguration).phase === 'decode');
    const feeder = Math.max(...prefill.map((e) => e.capacity));
    assert.ok(feeder > 0);
    for (const d of decode) {
      const helpers = helpersOf(d);
      assert.ok(d.capacity <= helpers * feeder * (1 + 1e-9), `${d.capacity} > ${helpers} x ${feeder}`);
      assert.ok(d.bracketed || helpers === 8, 'a lower bound only where the helpers ran out');
      assert.equal(d.scenario.fleet.instances.find((i) => i.role === 'prefill')?.count, helpers);
    }
    // Here the decode instance needs more than the first three feeders.
    assert.ok(decode.some((d) => helpersOf(d) > HELPERS && d.capacity > HELPERS * feeder));
  });

  test('a prefill instance whose decode helpers sustain no more than it is measured again beside more', () => {
    // Short prompts, long answers: three decode instances fall far behind one prefill instance.
    const prefillHeavy: PlanRequest = {
      ...decodeHeavy,
      base: { ...decodeHeavy.base, workload: 'synthetic:in=64,out=256' },
    };
    const plan = planDistServeHere(prefillHeavy, noCache, { maxHelpers: 8 });
    const of = (phase: string) =>
      plan.evaluated.find((e) => (e.configuration as PhaseConfiguration).phase === phase)!;
    const prefill = of('prefill');
    const decode = of('decode');
    assert.ok(HELPERS * decode.capacity < prefill.capacity, 'the case needs more than three');
    const helpers = helpersOf(prefill);
    assert.ok(helpers * decode.capacity > prefill.capacity || helpers === 8, `${helpers} helpers`);
    assert.equal(prefill.scenario.fleet.instances.find((i) => i.role === 'decode')?.count, helpers);
  });

  test('no measurement takes more helpers than maxHelpers allows, prefill included', () => {
    const plan = planDistServeHere(decodeHeavy, noCache, { maxHelpers: 2 });
    for (const e of plan.evaluated) {
      assert.ok(helpersOf(e) <= 2, `${helpersOf(e)} helpers`);
      const other = (e.configuration as PhaseConfiguration).phase === 'prefill' ? 'decode' : 'prefill';
      assert.equal(e.scenario.fleet.instances.find((i) => i.role === other)?.count, helpersOf(e));
    }
  });

  test('maxHelpers must be a whole number >= 1', () => {
    assert.throws(() => planDistServeHere(decodeHeavy, noCache, { maxHelpers: 0 }), /maxHelpers/);
  });
});
