import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Advisor, type Evaluator } from '../../src/gateway/advice/advisor.ts';
import { adviceSchema } from '../../src/gateway/advice/config.ts';
import { feedersFor } from '../../src/gateway/advice/recommend.ts';
import { HELPERS, MAX_HELPERS } from '../../src/search/distserve.ts';
import type { CapacityTask } from '../../src/search/task.ts';
import { runCapacityTask } from '../../src/search/task.ts';

const question = {
  costModel: 'mistral-7b-a6000',
  policy: 'distserve',
  disaggregated: true,
  seed: 0,
  requests: 20,
};

/** A disaggregated advisor whose window saw `rate` req/s for 10 s of `prompt`/`output` requests. */
function advisorAt(rate: number, headroom: number, evaluate: Evaluator, prompt = 200, output = 20) {
  const config = adviceSchema.parse({ slo: { ttft: 1, tpot: 0.1 }, windowSeconds: 10, headroom });
  let clock = 0;
  const advisor = new Advisor({ config, question, now: () => clock, evaluate });
  for (let i = 1; i <= rate * 10; i++) {
    const at = i / rate;
    advisor.arrived('m', at);
    advisor.finished('m', { promptTokens: prompt, cachedTokens: 0, outputTokens: output }, at);
  }
  clock = 10;
  return advisor;
}

/** The rate a search's last doubling probes (`searchUpTo`'s cap); unbounded without a doubling limit. */
const searchCap = (task: CapacityTask) =>
  task.maxDoublings === undefined ? Number.POSITIVE_INFINITY : task.low! * 2 ** (task.maxDoublings + 1);

const instances = (task: CapacityTask) =>
  Object.fromEntries(task.scenario.fleet.instances.map((i) => [i.role, i.count]));

test('feeders = max(HELPERS, ceil(rate x headroom / prefill capacity)), at most MAX_HELPERS', () => {
  assert.equal(feedersFor(10, 1.5, 2), 8);
  assert.equal(feedersFor(1, 1, 4), HELPERS);
  assert.equal(feedersFor(0, 1.2, 4), HELPERS);
  assert.equal(feedersFor(1e6, 1, 1), MAX_HELPERS);
  assert.equal(feedersFor(10, 1, 0), undefined);
});

test('the decode question is fed by the prefill replicas the rate needs, its search capped at what they sustain', async () => {
  const calls: CapacityTask[][] = [];
  // Prefill sustains 2 req/s per replica; decode 5.
  const evaluate: Evaluator = async (tasks) => {
    calls.push([...tasks]);
    return tasks.map((t) => ({
      rps: t.criterion.kind === 'slo' && t.criterion.metric === 'ttft' ? 2 : 5,
      bracketed: true,
      probes: [],
    }));
  };
  const advice = await advisorAt(10, 1.5, evaluate).tick();
  // Prefill first, then decode with its answer.
  assert.equal(calls.length, 2);
  const [[prefill], [decode]] = calls as [[CapacityTask], [CapacityTask]];
  assert.deepEqual(instances(prefill), { prefill: 1, decode: HELPERS });
  // 10 req/s x 1.5 / 2 = 7.5: 8 feeders (the old code: always 3, and an uncapped search).
  assert.deepEqual(instances(decode), { prefill: 8, decode: 1 });
  assert.ok(Math.abs(searchCap(decode) - 8 * 2) < 1e-9, `search cap ${searchCap(decode)}`);
  const [p, d] = advice.models[0]!.roles;
  assert.equal(p!.replicas, 8);
  assert.equal(d!.feeders, 8);
  assert.match(d!.how, /fed by 8 prefill replicas/);
  assert.equal(d!.replicas, 3);
  assert.deepEqual(advice.total, { prefill: 8, decode: 3 });
});

test('no prefill rate passing leaves the decode count unknown, without a decode search', async () => {
  const calls: CapacityTask[][] = [];
  const evaluate: Evaluator = async (tasks) => {
    calls.push([...tasks]);
    return tasks.map(() => ({ rps: 0, bracketed: true, probes: [] }));
  };
  const advice = await advisorAt(2, 1.2, evaluate).tick();
  assert.equal(calls.length, 1);
  assert.deepEqual(advice.total, { prefill: undefined, decode: undefined });
  const decode = advice.models[0]!.roles[1]!;
  assert.equal(decode.role, 'decode');
  assert.equal(decode.feeders, undefined);
  assert.match(decode.how, /not measured/);
});

test('a real evaluation: the decode capacity stays within what its feeders sustain', async () => {
  // Long prompts: one prefill replica sustains a few req/s, and 3 of them feed a decode replica far
  // below what it can take (the old fixed-3 question read about 10^6 req/s, unbracketed, here).
  const evaluate: Evaluator = async (tasks) => tasks.map(runCapacityTask);
  const advice = await advisorAt(40, 1, evaluate, 2000, 100).tick();
  const [p, d] = advice.models[0]!.roles;
  assert.ok(p!.capacityRps > 0);
  assert.equal(d!.feeders, Math.max(HELPERS, p!.replicas!));
  assert.ok(
    d!.capacityRps <= d!.feeders! * p!.capacityRps + 1e-9,
    `decode ${d!.capacityRps} req/s past ${d!.feeders} x ${p!.capacityRps}`,
  );
});
