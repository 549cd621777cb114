import assert from 'node:assert/strict';
import { test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { simulate } from '../../src/sim/simulator.ts';
import { InfoSpy } from '../helpers/info-spy.ts';
import { seq } from '../helpers/simple-cost-model.ts';

test("the simulator tells the policy each instance's own cost model and KV (a fleet of mixed GPUs)", () => {
  const a6000 = costModelPreset('mistral-7b-a6000');
  const h100 = costModelPreset('llama2-7b-h100');
  const policy = new InfoSpy();
  simulate({
    policy,
    instances: 2,
    costModel: a6000,
    fleet: [
      { costModel: a6000, role: 'mixed' },
      { costModel: h100, role: 'mixed' },
    ],
    requests: [{ id: 'r', arrival: 0, tokens: seq(100, 1), outputTokens: 4, workload: 'test' }],
  });
  assert.equal(policy.infos.get(0)!.costModel, a6000);
  assert.equal(policy.infos.get(1)!.costModel, h100);
  assert.equal(policy.infos.get(1)!.kvCapacityTokens, h100.kvCapacityTokens);
});
