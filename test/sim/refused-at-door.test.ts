import assert from 'node:assert/strict';
import { test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import type { KvLink } from '../../src/core/fleet/kv-link.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import { RoundRobinPolicy } from '../../src/core/policies/round-robin.ts';
import type { RouteRequest } from '../../src/core/types.ts';
import { Engine } from '../../src/engine/engine.ts';
import { sloAttainment } from '../../src/sim/metrics/slo.ts';
import type { SimRecord } from '../../src/sim/record.ts';
import { runSimulation } from '../../src/sim/run.ts';
import { simulate } from '../../src/sim/simulator.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { seq, simpleCostModel } from '../helpers/simple-cost-model.ts';

/** Records what each route call is told, and each request it is told failed. */
class RouteSpy extends RoundRobinPolicy {
  readonly seen: string[] = [];
  readonly failed: string[] = [];
  override route(request: RouteRequest, now: number) {
    this.seen.push(request.id);
    return super.route(request, now);
  }
  override requestFailed(id: string, now: number) {
    this.failed.push(id);
    super.requestFailed(id, now);
  }
}

// Peak KV of a request run whole: prompt + output - 1. With 300 tokens per instance, 'big' (400 + 9)
// fits nowhere; the others fit.
const stream = (): WorkloadRequest[] =>
  [
    { id: 'a', prompt: 100, output: 10 },
    { id: 'big', prompt: 400, output: 10 },
    { id: 'b', prompt: 200, output: 10 },
    { id: 'edge', prompt: 291, output: 10 },
  ].map((r, k) => ({
    id: r.id,
    arrival: k * 0.5,
    tokens: seq(r.prompt, 1000 * k),
    outputTokens: r.output,
    workload: 'test',
  }));

test('a request no instance could hold is refused at arrival, never routed, and the run goes on', () => {
  const policy = new RouteSpy();
  // Before: the engine threw "needs 409 KV tokens, more than the capacity of 300" and the run ended.
  const result = simulate({ policy, instances: 2, costModel: simpleCostModel(300), requests: stream() });
  assert.deepEqual(
    result.refused.map((r) => [r.id, r.promptTokens, r.outputTokens]),
    [['big', 400, 10]],
  );
  assert.deepEqual(policy.seen, ['a', 'b', 'edge'], 'the policy never sees it');
  assert.deepEqual(
    result.records.map((r) => r.id),
    ['a', 'b', 'edge'],
  );
  for (const r of result.records) assert.ok(r.finish > r.arrival, `${r.id} finished`);
});

test('the engine refuses exactly what the door refuses: kvNeed is the peak submit checks', () => {
  for (const queuePolicy of ['fcfs', 'no-preempt'] as const) {
    const engine = new Engine({ costModel: simpleCostModel(300), queuePolicy });
    for (const r of stream()) {
      const request = { id: r.id, tokens: r.tokens, outputTokens: r.outputTokens, maxTokens: r.outputTokens };
      const need = engine.kvNeed(request, 0);
      // fcfs holds what the output reaches (the prefill's token takes none); no-preempt reserves max_tokens.
      const grows = queuePolicy === 'fcfs' ? r.outputTokens - 1 : r.outputTokens;
      assert.equal(need, r.tokens.length + grows, `${queuePolicy} ${r.id}`);
      if (need > engine.kvCapacityTokens)
        assert.throws(() => engine.submit(request, 0), /more than the capacity of 300/);
      else engine.submit(request, 0);
    }
  }
});

test('the door counts max_tokens where the client gave it, as a server does, not the output it will turn out to have', () => {
  // 200 + 150 max_tokens passes 300 although its 10 tokens of output would fit: vLLM refuses
  // prompt + max_tokens past max_model_len before any work. Before, the engine took it and the
  // simulator served it.
  const requests: WorkloadRequest[] = [
    { id: 'capped', arrival: 0, tokens: seq(200, 0), outputTokens: 10, maxTokens: 150, workload: 'test' },
    { id: 'fits', arrival: 0.5, tokens: seq(200, 1000), outputTokens: 10, maxTokens: 80, workload: 'test' },
  ];
  const engine = new Engine({ costModel: simpleCostModel(300) });
  assert.equal(
    engine.kvNeed({ id: 'capped', tokens: seq(200, 0), outputTokens: 10, maxTokens: 150 }, 0),
    349,
  );
  const result = simulate({
    policy: new RouteSpy(),
    instances: 2,
    costModel: simpleCostModel(300),
    requests,
  });
  assert.deepEqual(
    result.refused.map((r) => r.id),
    ['capped'],
  );
  assert.deepEqual(
    result.records.map((r) => r.id),
    ['fits'],
  );
});

test('a disaggregated fleet refuses a request whose prompt fits a prefill instance but no decode one', () => {
  const big = costModelPreset('mistral-7b-a6000', { kvCapacityTokens: 40_000 });
  const small = costModelPreset('mistral-7b-a6000', { kvCapacityTokens: 1_000 });
  const link: KvLink = { class: 'infiniband-200', bandwidth: 25e9, latency: 10e-6 };
  const requests: WorkloadRequest[] = [600, 2_000, 800].map((prompt, k) => ({
    id: `r${k}`,
    arrival: k,
    tokens: seq(prompt, 10_000 * k),
    outputTokens: 8,
    workload: 'test',
  }));
  const result = simulate({
    policy: createGlobalPolicy('distserve', { costModel: big }),
    instances: 2,
    costModel: big,
    fleet: [
      { costModel: big, role: 'prefill' },
      { costModel: small, role: 'decode' },
    ],
    engine: { queuePolicy: 'fcfs' },
    kvTransfer: { placement: { nodeOf: (i) => i, nodeLink: link, network: link }, mode: 'serialized' },
    requests,
  });
  assert.deepEqual(
    result.refused.map((r) => r.id),
    ['r1'],
  );
  assert.deepEqual(
    result.records.map((r) => [r.id, r.decodeInstance]),
    [
      ['r0', 1],
      ['r2', 1],
    ],
  );
});

test('the report counts refused requests in requests, not in completed, and as missing the SLO', () => {
  const spec = {
    policy: 'round-robin',
    workload: 'test',
    instances: 2,
    rps: 2,
    costModel: costModelPreset('mistral-7b-a6000', { kvCapacityTokens: 300 }),
    requests: stream,
    seed: 0,
    slo: { ttft: 1e9, tpot: 1e9 },
  };
  const run = runSimulation(spec);
  assert.equal(run.report.requests, 4);
  assert.equal(run.report.completed, 3);
  assert.equal(run.report.refused, 1);
  assert.deepEqual(run.report.sloAttainment, { ttft: 0.75, tpot: 0.75, both: 0.75 });
  // Without a refusal the field is absent, so reports of runs that refuse nothing read as before.
  const none = runSimulation({ ...spec, requests: () => stream().filter((r) => r.id !== 'big') });
  assert.equal(none.report.refused, undefined);
  assert.equal(none.report.sloAttainment?.both, 1);
});

test('sloAttainment counts each refused request as meeting neither target', () => {
  const met = { arrival: 0, firstToken: 0.1, finish: 0.2, outputTokens: 2 } as SimRecord;
  assert.deepEqual(sloAttainment([met], { ttft: 1, tpot: 1 }, 1), { ttft: 0.5, tpot: 0.5, both: 0.5 });
  assert.deepEqual(sloAttainment([met], { ttft: 1, tpot: 1 }), { ttft: 1, tpot: 1, both: 1 });
  assert.deepEqual(sloAttainment([], { ttft: 1, tpot: 1 }, 2), { ttft: 0, tpot: 0, both: 0 });
});

test('with no active instance at all nothing is refused for its size: routing fails as before', () => {
  const run = () =>
    simulate({
      policy: new RouteSpy(),
      instances: 2,
      costModel: simpleCostModel(300),
      fleetActions: [
        { at: 0.1, action: 'drain', instance: 0 },
        { at: 0.1, action: 'drain', instance: 1 },
      ],
      requests: stream().slice(2),
    });
  assert.throws(run, /no instance is available to take the request/);
});

test("a decode-role engine's need is its decode as adopt takes it (no-preempt reserves max_tokens less the token out)", () => {
  const engine = new Engine({ costModel: simpleCostModel(300), queuePolicy: 'no-preempt', role: 'decode' });
  // 200 + 101 = 301 for the whole request, but on the decode instance 200 + (101 - 1) = 300: it fits.
  const request = { id: 'd', tokens: seq(200, 1), outputTokens: 50, maxTokens: 101 };
  assert.equal(engine.kvNeed(request, 0), 300);
  engine.adopt(request, { kvTokens: 200, generated: 1 }, 0);
  assert.throws(
    () => engine.adopt({ ...request, id: 'e', maxTokens: 102 }, { kvTokens: 200, generated: 1 }, 0),
    /needs 301 KV tokens/,
  );
  assert.equal(engine.kvNeed({ ...request, id: 'e', maxTokens: 102 }, 0), 301);
});

test('in a fleet of mixed KV sizes, the instance chosen too small refuses the request; the policy is told and routes it to a larger one', () => {
  const policy = new RouteSpy();
  // Round robin alternates: instance 0 (300 tokens) cannot hold a 500-token prompt, 1 (1,000) can.
  const requests: WorkloadRequest[] = [500, 100, 500, 500].map((prompt, k) => ({
    id: `r${k}`,
    arrival: k * 0.5,
    tokens: seq(prompt, 1000 * k),
    outputTokens: 4,
    workload: 'test',
  }));
  // Before: the refused ones were left out (a gateway retries a replica's context-length 400 on a larger one).
  const result = simulate({
    policy,
    instances: 2,
    costModel: simpleCostModel(300),
    fleet: [
      { costModel: simpleCostModel(300), role: 'mixed' },
      { costModel: simpleCostModel(1000), role: 'mixed' },
    ],
    requests,
  });
  assert.deepEqual(result.refused, []);
  assert.equal(result.rerouted, 2);
  // Round robin's turn moves on with each pick: r0 -> 0 (refused) -> 1, r1 -> 0, r2 -> 1, r3 -> 0 -> 1.
  assert.deepEqual(policy.failed, ['r0', 'r3'], 'the policy is told of each refusal');
  assert.deepEqual(policy.seen, ['r0', 'r0', 'r1', 'r2', 'r3', 'r3']);
  for (const r of result.records) {
    if (r.promptTokens === 500) assert.equal(r.instance, 1, `${r.id} on the larger instance`);
    assert.ok(r.finish > r.arrival, `${r.id} finished`);
  }
  assert.equal(result.records.length, 4);
});

test('a policy that sends a request again to an instance it was told to avoid is an error, not a loop', () => {
  // Always instance 0 (300 tokens), whatever it is told to avoid.
  class Stubborn extends RoundRobinPolicy {
    override route(request: RouteRequest, now: number) {
      return super.route({ ...request, avoid: [] }, now);
    }
    protected override choose() {
      return { instance: 0, branch: 'rr', matchedTokens: 0, costs: [] };
    }
  }
  assert.throws(
    () =>
      simulate({
        policy: new Stubborn(),
        instances: 2,
        costModel: simpleCostModel(300),
        fleet: [
          { costModel: simpleCostModel(300), role: 'mixed' },
          { costModel: simpleCostModel(1000), role: 'mixed' },
        ],
        requests: [{ id: 'big', arrival: 0, tokens: seq(500, 1), outputTokens: 4, workload: 'test' }],
      }),
    /^Error: policy round-robin sent 'big' again to instance 0, too small for it, which it was asked to avoid$/,
  );
});

// One prefill instance and two decode instances, 1 with 1,000 KV tokens and 2 with 40,000.
const big = costModelPreset('mistral-7b-a6000', { kvCapacityTokens: 40_000 });
const small = costModelPreset('mistral-7b-a6000', { kvCapacityTokens: 1_000 });
const link: KvLink = { class: 'infiniband-200', bandwidth: 25e9, latency: 10e-6 };
const mixedSizeDecodes = {
  instances: 3,
  costModel: big,
  fleet: [
    { costModel: big, role: 'prefill' as const },
    { costModel: small, role: 'decode' as const },
    { costModel: big, role: 'decode' as const },
  ],
  kvTransfer: {
    placement: { nodeOf: (i: number) => i, nodeLink: link, network: link },
    mode: 'serialized' as const,
  },
};

test('a decode instance named at arrival too small for the decode refuses it; routed again, it decodes on a larger one (Splitwise, mixed sizes)', () => {
  const policy = createGlobalPolicy('splitwise', { costModel: big });
  const result = simulate({
    policy,
    ...mixedSizeDecodes,
    engine: { queuePolicy: 'fcfs' },
    requests: [{ id: 'long', arrival: 0, tokens: seq(2_000, 1), outputTokens: 8, workload: 'test' }],
  });
  // Before: refused by instance 1.
  assert.deepEqual(result.refused, []);
  assert.equal(result.rerouted, 1);
  assert.deepEqual(
    result.records.map((r) => [r.id, r.instance, r.decodeInstance, r.finish > 0]),
    [['long', 0, 2, true]],
  );
});

/** DistServe that lists each request it is told failed. */
const distServeSpy = () => {
  const policy = createGlobalPolicy('distserve', { costModel: big });
  const failed: string[] = [];
  const requestFailed = policy.requestFailed.bind(policy);
  policy.requestFailed = (id, now) => {
    failed.push(id);
    requestFailed(id, now);
  };
  return { policy, failed };
};

// Ties rotate over the decode instances 1 (1,000 tokens) and 2 (40,000): 'long' is picked 1 first,
// 'short' and 'fits' (prompt and output 1,000 - 1) follow.
const decodeStream = (): WorkloadRequest[] =>
  [
    ['long', 2_000],
    ['short', 100],
    ['fits', 992],
  ].map(([id, prompt], k) => ({
    id: id as string,
    arrival: k * 5,
    tokens: seq(prompt as number, 10_000 * k),
    outputTokens: 8,
    workload: 'test',
  }));

test('a decode instance picked when the KV is ready, too small for the decode, refuses it; a larger one pulls the same KV (DistServe, mixed sizes)', () => {
  const { policy, failed } = distServeSpy();
  const asked: (readonly number[])[] = [];
  const routeDecode = policy.routeDecode!.bind(policy);
  policy.routeDecode = (id, prefill, kvTokens, now, avoid) => {
    asked.push(avoid ?? []);
    return routeDecode(id, prefill, kvTokens, now, avoid);
  };
  // Before: 'long' was refused after its prefill.
  const result = simulate({ policy, ...mixedSizeDecodes, requests: decodeStream() });
  assert.deepEqual(result.refused, []);
  assert.equal(result.rerouted, 1);
  assert.deepEqual(failed, [], 'no request failed: the prefill ran once');
  assert.deepEqual(asked[0], [], 'the first pick avoids nothing');
  assert.deepEqual(asked[1], [1], 'the retry avoids the refusing instance');
  const long = result.records.find((r) => r.id === 'long')!;
  assert.deepEqual([long.instance, long.decodeInstance, long.outputTokens], [0, 2, 8]);
  assert.ok(long.finish > 0);
  assert.equal(result.records.length, 3);
  assert.equal(result.engines[0]!.heldKvTokens, 0, 'every KV left the prefill instance');
});

test('when no decode instance left can hold the decode, the request is refused after its prefill and the prefill instance lets its KV go', () => {
  const { policy, failed } = distServeSpy();
  // The large decode instance drains while 'long' prefills: the small one is all that is left.
  const result = simulate({
    policy,
    ...mixedSizeDecodes,
    fleetActions: [{ at: 0.01, action: 'drain', instance: 2 }],
    requests: decodeStream().slice(0, 1),
  });
  assert.deepEqual(
    result.refused.map((r) => [r.id, r.instance, r.prefilledOn]),
    [['long', 1, 0]],
  );
  assert.equal(result.rerouted, 0);
  assert.deepEqual(failed, ['long']);
  assert.equal(result.engines[0]!.heldKvTokens, 0);
});

test('kvNeed sizes a request the engine already holds (its prefill leg, asked about its decode) without refusing the id', () => {
  const engine = new Engine({ costModel: simpleCostModel(300), queuePolicy: 'fcfs' });
  const request = { id: 'here', tokens: seq(100, 1), outputTokens: 20 };
  engine.submit(request, 0, { stopAfterPrefill: true });
  // Before: "engine: request 'here' is already here" (a prefill instance turned decode picked for its own leg).
  assert.equal(engine.kvNeed(request, 0, 'decode'), 119);
  assert.throws(() => engine.submit(request, 0), /already here/);
});
