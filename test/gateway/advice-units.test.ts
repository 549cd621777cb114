import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Advisor, type Evaluator } from '../../src/gateway/advice/advisor.ts';
import { adviceSchema } from '../../src/gateway/advice/config.ts';
import { decodeTask, replicasFor, roleTasks } from '../../src/gateway/advice/recommend.ts';
import { TrafficWindow } from '../../src/gateway/advice/window.ts';
import { lengthDistOf, observedWorkload } from '../../src/gateway/advice/workload.ts';
import { parseWorkloadSpec } from '../../src/workloads/traces/registry.ts';

const counts = (prompt: number, output: number, cached = 0) => ({
  promptTokens: prompt,
  cachedTokens: cached,
  outputTokens: output,
});

test('the window keeps what arrived within it and rates it over its span', () => {
  const w = new TrafficWindow(10, 0);
  for (let t = 1; t <= 20; t++) w.arrived('m', t);
  w.finished('m', counts(100, 10, 50), 15);
  w.finished('m', counts(300, 30), 3); // falls out of the window
  const seen = w.observe(20);
  assert.equal(seen.spanSeconds, 10);
  const [m] = seen.models;
  assert.equal(m!.arrivals, 10);
  assert.equal(m!.rate, 1);
  assert.equal(m!.finished, 1);
  assert.equal(m!.prompt.mean, 100);
  assert.equal(m!.cachedShare, 0.5);
  // Younger than the window: the rate is over the gateway's age.
  const young = new TrafficWindow(100, 0);
  young.arrived('m', 1);
  young.arrived('m', 2);
  assert.equal(young.observe(4).models[0]!.rate, 0.5);
});

test('the window becomes a synthetic workload of its observed lengths, rounded for the cache', () => {
  const w = new TrafficWindow(60, 0);
  for (const [i, p] of [100, 200, 300].entries()) w.finished('m', counts(p, 10 * (i + 1)), i);
  const traffic = w.observe(10).models[0]!;
  const workload = observedWorkload(traffic)!;
  const spec = parseWorkloadSpec(workload);
  assert.equal(spec.kind, 'synthetic');
  assert.deepEqual(lengthDistOf(traffic.prompt), {
    kind: 'lognormal',
    mean: 200,
    sd: 82,
    min: 100,
    max: 300,
  });
  assert.deepEqual(lengthDistOf({ count: 2, mean: 7, sd: 0, min: 7, max: 7 }), { kind: 'fixed', value: 7 });
  // Nothing finished yet: no lengths to build from.
  const empty = new TrafficWindow(60, 0);
  empty.arrived('m', 1);
  assert.equal(observedWorkload(empty.observe(2).models[0]!), undefined);
});

test('replicas = ceil(rate x headroom / capacity)', () => {
  assert.equal(replicasFor(10, 1.2, 4), 3);
  assert.equal(replicasFor(10, 1, 5), 2);
  assert.equal(replicasFor(0, 1.2, 4), 0);
  assert.equal(replicasFor(1, 1, 0), undefined);
});

const question = {
  costModel: 'mistral-7b-a6000',
  policy: 'round-robin',
  seed: 0,
  requests: 20,
  slo: { ttft: 1, tpot: 0.1 },
  target: 0.9,
};

test('a colocated fleet asks one question, a disaggregated one DistServe two in turn', () => {
  const mixed = roleTasks({ ...question, disaggregated: false }, 'synthetic:in=10,out=5');
  assert.deepEqual(
    mixed.map((t) => t.role),
    ['mixed'],
  );
  assert.deepEqual(mixed[0]!.task.scenario.fleet.instances, [
    { model: 'mistral-7b-a6000', role: 'mixed', count: 1 },
  ]);
  const disaggregated = { ...question, policy: 'distserve', disaggregated: true };
  // The prefill question first; the decode one needs its answer (advice-feeders.test.ts).
  const split = [
    ...roleTasks(disaggregated, 'synthetic:in=10,out=5'),
    decodeTask(disaggregated, 'synthetic:in=10,out=5', 3, 2),
  ];
  assert.deepEqual(
    split.map((t) => [t.role, t.task.criterion]),
    [
      ['prefill', { kind: 'slo', target: 0.9, metric: 'ttft' }],
      ['decode', { kind: 'slo', target: 0.9, metric: 'tpot', decodeWait: 1 }],
    ],
  );
});

test('the advisor recommends from a hand-made window with a known capacity', async () => {
  let clock = 0;
  const asked: string[] = [];
  // A cost model whose capacity is known: 4 requests per second per replica.
  const evaluate: Evaluator = async (tasks) => {
    asked.push(...tasks.map((t) => t.scenario.workload));
    return tasks.map(() => ({ rps: 4, bracketed: true, probes: [] }));
  };
  const config = adviceSchema.parse({ slo: { ttft: 1, tpot: 0.1 }, windowSeconds: 10, headroom: 1.5 });
  const advisor = new Advisor({
    config,
    question: { ...question, disaggregated: false },
    now: () => clock,
    evaluate,
  });
  for (let i = 1; i <= 100; i++) {
    advisor.arrived('m', i * 0.1);
    advisor.finished('m', counts(200, 20), i * 0.1);
  }
  clock = 10;
  const advice = await advisor.tick();
  assert.equal(advice.models[0]!.rate, 10);
  assert.equal(advice.models[0]!.roles[0]!.replicas, Math.ceil((10 * 1.5) / 4));
  assert.equal(advice.total.mixed, 4);
  assert.deepEqual(asked, ['synthetic:in=200,out=20']);
  assert.equal(advisor.latest, advice);
});

test('an empty window asks for no replica; arrivals with nothing finished leave the count unknown', async () => {
  let clock = 0;
  const evaluate: Evaluator = async (tasks) => tasks.map(() => ({ rps: 4, bracketed: true, probes: [] }));
  const config = adviceSchema.parse({ slo: { ttft: 1, tpot: 0.1 }, windowSeconds: 10 });
  const advisor = (disaggregated: boolean) =>
    new Advisor({ config, question: { ...question, disaggregated }, now: () => clock, evaluate });
  const colocated = advisor(false);
  clock = 5;
  // No traffic at all: zero per role of the question (the actor then goes down to its min).
  assert.deepEqual((await colocated.tick()).total, { mixed: 0 });
  assert.deepEqual((await advisor(true).tick()).total, { prefill: 0, decode: 0 });
  // A request under way and none finished: its lengths are unknown, and so is the count.
  colocated.arrived('m', 6);
  clock = 7;
  assert.deepEqual((await colocated.tick()).total, { mixed: undefined });
  colocated.finished('m', counts(200, 20), 8);
  clock = 9;
  assert.equal((await colocated.tick()).total.mixed, 1);
  // Once it has left the window, the window is empty again.
  clock = 30;
  assert.deepEqual((await colocated.tick()).total, { mixed: 0 });
});

test('the advice config refuses bounds the wrong way round', () => {
  const bad = adviceSchema.safeParse({ slo: { ttft: 1, tpot: 0.1 }, min: 5, max: 2 });
  assert.equal(bad.success, false);
});
