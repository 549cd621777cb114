import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GPU_SHAPES } from '../../../src/core/cost-model/gpu-shapes.ts';
import {
  instanceKvMemory,
  kvBytesPerToken,
  kvCapacityTokens,
} from '../../../src/core/cost-model/instance.ts';
import { MODEL_SHAPES } from '../../../src/core/cost-model/model-shapes.ts';

test('KV bytes per token: 2 x layers x kv heads x head dim x 2 bytes', () => {
  assert.equal(kvBytesPerToken(MODEL_SHAPES['mistral-7b']), 131_072); // 2*32*8*128*2
  assert.equal(kvBytesPerToken(MODEL_SHAPES['llama2-7b']), 524_288); // 2*32*32*128*2
  assert.equal(kvBytesPerToken(MODEL_SHAPES['llama3-8b']), 131_072);
  assert.equal(kvBytesPerToken(MODEL_SHAPES['llama3-70b']), 327_680); // 2*80*8*128*2
});

test('KV capacity: what is left of the memory share after the weights, in tokens', () => {
  const instance = {
    model: MODEL_SHAPES['llama2-7b'],
    gpu: GPU_SHAPES['h100-80g'],
    gpuCount: 2,
    memoryFraction: 0.9,
  };
  const expected = Math.floor((2 * 80 * 2 ** 30 * 0.9 - 6_738_415_616 * 2) / 524_288);
  assert.equal(kvCapacityTokens(instance), expected);
  assert.equal(instanceKvMemory(instance).kvCapacityTokens, expected);
});

test('a model that does not fit has no capacity, and instanceKvMemory says so unless overridden', () => {
  const instance = {
    model: MODEL_SHAPES['llama3-70b'],
    gpu: GPU_SHAPES.a6000,
    gpuCount: 1,
    memoryFraction: 0.8,
  };
  assert.equal(kvCapacityTokens(instance), 0);
  assert.throws(() => instanceKvMemory(instance), /does not fit/);
  assert.deepEqual(instanceKvMemory(instance, 1000), { kvBytesPerToken: 327_680, kvCapacityTokens: 1000 });
  assert.throws(() => instanceKvMemory(instance, -1), /non-negative/);
});
