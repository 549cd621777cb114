import assert from 'node:assert/strict';
import { test } from 'node:test';
import { prefillSaturationTokens } from '../../../src/core/cost-model/prefill-saturation.ts';
import { costModelPreset } from '../../../src/core/cost-model/presets.ts';
import type { CostModel } from '../../../src/core/cost-model/types.ts';
import { policyEntry } from '../../../src/core/policies/registry.ts';
import { simpleCostModel } from '../../helpers/simple-cost-model.ts';

test('L_m by hand: a prefill of 10 ms + 0.1 ms per token saturates at 1,773 tokens', () => {
  // Per token: 10 ms / n + 0.1 ms, lowest at n = 16,384 (0.1 ms + 0.61 us). Within 5%:
  // 10 ms / n <= 1.05 x 0.61 us + 0.05 x 0.1 ms = 5.64 us, so n >= 1772.8.
  const model: CostModel = { ...simpleCostModel(), prefillTime: (n) => 0.01 + 0.0001 * n };
  assert.equal(prefillSaturationTokens(model), 1773);
  // A tighter tolerance asks for a longer prompt; a cost without fixed part saturates at once.
  assert.ok(prefillSaturationTokens(model, { tolerance: 0.01 }) > 1773);
  assert.equal(prefillSaturationTokens(simpleCostModel()), 1);
  // The attention term raises the per-token time again: 10 ms / n + 0.1 ms + 0.01 us x n is lowest at
  // n = 1,000 (0.12 ms); within 5% (0.126 ms) from the root of 1e-8 n^2 - 2.6e-5 n + 0.01, n = 469.3.
  const quadratic: CostModel = { ...simpleCostModel(), prefillTime: (n) => 0.01 + 0.0001 * n + 1e-8 * n * n };
  assert.equal(prefillSaturationTokens(quadratic), 470);
});

test('L_m on the presets: from a few tokens on a CPU to ~1,750 on a 70B model', () => {
  const lm = (name: string) => prefillSaturationTokens(costModelPreset(name));
  assert.equal(lm('mistral-7b-a6000'), 189);
  assert.equal(lm('llama2-7b-h100'), 715);
  assert.equal(lm('llama3-70b-h100'), 1753);
  assert.equal(lm('llamacpp-small-cpu'), 13);
  // DistServe's 13B on an A100 (its testbed): the roofline saturates near its ridge point, ~100 tokens,
  // where DistServe measured 512.
  assert.equal(lm('roofline:llama2-13b@a100'), 96);
  assert.equal(lm('roofline:llama2-13b@h100'), 186);
});

test("distserve's prefill instances batch up to L_m of their own cost model", () => {
  const entry = policyEntry('distserve');
  const model = costModelPreset('roofline:llama2-13b@a100');
  assert.deepEqual(entry.prefillBatching?.(model), {
    chunkedPrefillTokens: prefillSaturationTokens(model),
    enableChunking: false,
  });
  assert.equal(policyEntry('splitwise').prefillBatching, undefined);
});
