import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { Evaluator } from '../../src/gateway/advice/advisor.ts';
import { adviceSchema } from '../../src/gateway/advice/config.ts';
import { complete, type Engine, gatewayMetric, MODEL, startEngine, startGateway } from './helpers.ts';

const ADMIN = 'admin-key-0123456789abcdef';
const engines: Engine[] = [];
after(async () => {
  await Promise.all(engines.map((e) => e.server.close()));
});

async function adminGet(url: string, key = ADMIN) {
  const res = await fetch(`${url}/admin/advice`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

test('GET /admin/advice and the advice gauges over real HTTP with emulated replicas', async () => {
  const engine = await startEngine();
  engines.push(engine);
  const tasks: string[] = [];
  // The capacity search itself is tested in test/search; here a known capacity of 2 rps.
  const evaluate: Evaluator = async (asked) => {
    tasks.push(...asked.map((t) => t.scenario.workload));
    return asked.map(() => ({ rps: 2, bracketed: true, probes: [] }));
  };
  const { gateway, url } = await startGateway([engine.url], {
    model: MODEL,
    auth: { adminKey: ADMIN },
    advice: {
      config: adviceSchema.parse({ slo: { ttft: 2, tpot: 0.2 }, intervalSeconds: 3600, headroom: 1 }),
      costModel: MODEL,
      evaluate,
    },
  });
  try {
    assert.deepEqual((await adminGet(url)).json, { status: 'pending' });
    for (let i = 0; i < 4; i++) assert.equal((await complete(url, { max_tokens: 4 })).status, 200);
    await gateway.adviseNow();
    const { status, json } = await adminGet(url);
    assert.equal(status, 200);
    assert.equal(json['status'], 'ready');
    const [model] = json['models'] as {
      model: string;
      arrivals: number;
      finished: number;
      rate: number;
      output: { mean: number };
      roles: { role: string; replicas: number; capacityRps: number; how: string }[];
    }[];
    assert.equal(model!.model, MODEL);
    assert.equal(model!.arrivals, 4);
    assert.equal(model!.finished, 4);
    assert.equal(model!.output.mean, 4);
    assert.equal(model!.roles[0]!.role, 'mixed');
    assert.equal(model!.roles[0]!.capacityRps, 2);
    assert.equal(model!.roles[0]!.replicas, Math.ceil(model!.rate / 2));
    assert.match(model!.roles[0]!.how, /one mistral-7b-a6000 replica/);
    assert.equal(tasks.length, 1);
    assert.equal(await gatewayMetric(gateway, 'preble_advice_capacity_rps', { role: 'mixed' }), 2);
    assert.equal(await gatewayMetric(gateway, 'preble_advice_arrival_rate'), model!.rate);
    assert.equal(
      await gatewayMetric(gateway, 'preble_advice_replicas', { role: 'mixed', model: MODEL }),
      model!.roles[0]!.replicas,
    );
    // Client keys and no key are refused as on every admin route.
    assert.equal((await adminGet(url, 'nope')).status, 401);
  } finally {
    await gateway.close();
  }
});

test('GET /admin/advice says advice is off when it is not configured', async () => {
  const engine = await startEngine();
  engines.push(engine);
  const { gateway, url } = await startGateway([engine.url], { model: MODEL, auth: { adminKey: ADMIN } });
  try {
    const { status, json } = await adminGet(url);
    assert.equal(status, 404);
    assert.match(JSON.stringify(json), /live advice is off/);
  } finally {
    await gateway.close();
  }
});
