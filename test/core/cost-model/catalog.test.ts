import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  findGpu,
  findModel,
  gpuEconomics,
  gpuNames,
  gpuShape,
  modelNames,
  modelShape,
} from '../../../src/core/cost-model/catalog.ts';
import { kvBytesPerToken } from '../../../src/core/cost-model/instance.ts';
import type { ModelShape } from '../../../src/core/cost-model/types.ts';

/** Parameters that follow from a shape: layers of attention and MLP, embeddings, norms. */
function paramsFromShape(m: ModelShape): number {
  const q = m.heads * m.headDim;
  const kv = m.kvHeads * m.headDim;
  const h = m.hidden;
  const f = m.mlpHidden!;
  if (m.gatedMlp) {
    // Llama, Mistral (no biases, RMS norms); Qwen has QKV biases and an untied head like Llama's.
    const qkvBias = m.name.startsWith('qwen') ? q + 2 * kv : 0;
    const layer = h * q + 2 * h * kv + q * h + qkvBias + 3 * h * f + 2 * h;
    return m.layers * layer + 2 * m.vocab! * h + h;
  }
  // OPT: biases everywhere, LayerNorms with bias, tied embeddings, 2050 learned positions.
  const layer = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;
  return m.layers * layer + m.vocab! * h + 2050 * h + 2 * h;
}

test('every catalog model: params follow from its layers, widths and vocabulary; source named', () => {
  assert.ok(modelNames().length >= 10);
  for (const name of modelNames()) {
    const model = modelShape(name);
    assert.equal(model.hidden, model.heads * model.headDim, name);
    assert.ok(model.source && model.mlpHidden && model.vocab, name);
    assert.equal(model.params, paramsFromShape(model), name);
  }
});

test('DistServe: a 512-token OPT-66B request holds 1.13 GB of KV', () => {
  const bytes = kvBytesPerToken(modelShape('opt-66b')) * 512;
  assert.equal(bytes, 2 * 64 * 9216 * 2 * 512);
  assert.ok(Math.abs(bytes / 2 ** 30 - 1.125) < 1e-12);
  // Vidur: Qwen-72B (MHA) has 8x the KV per token of Llama-2-70B (GQA).
  assert.equal(kvBytesPerToken(modelShape('qwen-72b')), 8 * kvBytesPerToken(modelShape('llama2-70b')));
});

test('every catalog GPU has its datasheet numbers, a link, a price and a power with sources', () => {
  for (const name of gpuNames()) {
    const gpu = gpuShape(name);
    assert.ok(gpu.peakFlops > 0 && gpu.bandwidth > 0 && gpu.memoryBytes > 0, name);
    assert.ok(gpu.interconnectBandwidth! > 0 && gpu.interconnect && gpu.source, name);
    const economics = gpuEconomics(name)!;
    assert.ok(economics.pricePerHour > 0 && economics.powerWatts > 0 && economics.source, name);
  }
  // Splitwise's Table I prices stay.
  assert.equal(gpuEconomics('a100')!.pricePerHour, 2.2);
  assert.equal(gpuEconomics('h100-80g')!.pricePerHour, 4.75);
  assert.equal(gpuEconomics('epyc-thread'), undefined);
});

test('lookups: aliases resolve, unknown names give undefined or an error that lists the valid names', () => {
  assert.equal(findGpu('h100')?.name, 'h100-80g');
  assert.equal(findGpu('a100')?.name, 'a100-80g');
  assert.equal(findGpu('tpu'), undefined);
  assert.equal(findModel('constructor'), undefined);
  assert.equal(findModel('opt-175b')?.layers, 96);
  assert.throws(() => modelShape('gpt-5'), /unknown model "gpt-5"; valid: .*qwen-72b/);
  assert.throws(() => gpuShape('tpu'), /unknown GPU "tpu"; valid: .*l4.*h100/);
});
