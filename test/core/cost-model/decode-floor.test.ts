import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gpuNames, modelNames } from '../../../src/core/cost-model/catalog.ts';
import { instanceKvMemory } from '../../../src/core/cost-model/instance.ts';
import { linearCostModel } from '../../../src/core/cost-model/linear.ts';
import { LLAMA3_70B_H100_COEFFICIENTS } from '../../../src/core/cost-model/llama3-70b-h100.ts';
import { costModelPreset, presetNames } from '../../../src/core/cost-model/presets.ts';
import { type Hardware, memoryBandwidthFloor } from '../../../src/core/cost-model/roofline.ts';
import type { CostModel } from '../../../src/core/cost-model/types.ts';

/*
 * A decode step of B requests at context S (each computes token S + 1) reads every weight and the batch's
 * KV at least once, so it takes at least memoryBandwidthFloor: the datasheet bandwidth of the GPUs, no
 * efficiency. Upper bounds, from what the honest presets give over this grid:
 * - up to 64 requests, 3x. Such steps are memory-bound on every GPU in the table, and the presets give at
 *   most 1.6x (the roofline: 70% of peak bandwidth plus 0.5 ms; mistral-7b-a6000 1.3x, llama2-7b-h100
 *   1.4x). 3x leaves room for a fit with a larger fixed cost per step, but not for the old llama3-70b-h100,
 *   which charged its prefill fit's 2.685e-3 ms per context token to every decode row (43x at 64 x 4k).
 * - 128 and 256 requests, 6x. Large batches turn compute-bound: the roofline at decode MFU 0.3 gives 4.3x
 *   for Llama-3-70B on 4 A100 at 256 x 512, where the FLOPs, not the bytes, set the time, and 5.3x on
 *   8 V100 (a lower FLOP/byte ridge), where the all-reduces of 256 tokens over NVLink 2 add 0.5x.
 * Tensor and pipeline parallel rooflines (parallel.ts) are held to the same bounds when they use at most
 * twice the GPUs the model needs; beyond that the fixed costs (0.5 ms per step, 10 us per all-reduce)
 * outweigh a floor that shrinks with every GPU (a 7B model on 8 H200: 0.4 ms), as on real engines.
 * The CPU preset is left out: one llama.cpp thread is compute-bound (its 19 MB of Q8_0 weights stay in
 * cache, and every decode row pays its own matmul time), so an HBM floor says nothing about it; its shape
 * has no bandwidth. Its decode steps are checked against its calibration in llamacpp-small-cpu.test.ts.
 */
const BATCH_SIZES = [1, 2, 3, 4, 8, 16, 32, 64, 100, 128, 256];
const CONTEXTS = [512, 1024, 2048, 4096, 8192];
const MEMORY_BOUND_UP_TO = 64;
const MEMORY_BOUND_MULTIPLE = 3;
const LARGE_BATCH_MULTIPLE = 6;

/** Decode steps of the grid that fit in `capacity` and break the bounds, as readable lines. */
function decodeBoundViolations(model: CostModel, hardware: Hardware, capacity: number): string[] {
  const violations: string[] = [];
  for (const requests of BATCH_SIZES) {
    for (const context of CONTEXTS) {
      const seqTokens = requests * (context + 1);
      if (seqTokens > capacity) continue;
      const batch = { requests, newTokens: requests, seqTokens, newTimesSeq: seqTokens };
      const floor = memoryBandwidthFloor(hardware, batch);
      const step = model.iterationTime(batch);
      const multiple = requests <= MEMORY_BOUND_UP_TO ? MEMORY_BOUND_MULTIPLE : LARGE_BATCH_MULTIPLE;
      if (!(step >= floor && step <= multiple * floor)) {
        const ms = (seconds: number) => `${(seconds * 1e3).toFixed(2)} ms`;
        violations.push(
          `${model.name} B=${requests} S=${context}: step ${ms(step)}, floor ${ms(floor)} (${(step / floor).toFixed(2)}x, allowed 1..${multiple}x)`,
        );
      }
    }
  }
  return violations;
}

test('every GPU preset: a decode step is within 1..3x (6x above 64 requests) of the memory-bandwidth floor', () => {
  const skipped: string[] = [];
  for (const name of presetNames()) {
    const preset = costModelPreset(name);
    if (!(preset.instance.gpu.bandwidth > 0)) {
      skipped.push(name);
      continue;
    }
    // Every preset covers batch 1 at 512 context, so none passes by having no grid point.
    assert.ok(preset.kvCapacityTokens >= 513, name);
    assert.deepEqual(decodeBoundViolations(preset, preset.instance, preset.kvCapacityTokens), [], name);
  }
  assert.deepEqual(skipped, ['llamacpp-small-cpu']);
});

test('the bound rejects the old llama3-70b-h100: the published prefill fit applied to decode', () => {
  const preset = costModelPreset('llama3-70b-h100');
  const old = linearCostModel('llama3-70b-h100 (prefill fit for decode)', LLAMA3_70B_H100_COEFFICIENTS, {
    kvBytesPerToken: preset.kvBytesPerToken,
    kvCapacityTokens: preset.kvCapacityTokens,
  });
  const violations = decodeBoundViolations(old, preset.instance, preset.kvCapacityTokens);
  // 64 requests at 4k: 728 ms against a floor of 16.9 ms.
  assert.ok(
    violations.some((line) => line.includes('B=64 S=4096')),
    violations.join('\n'),
  );
  assert.ok(violations.length > 20, `${violations.length}`);
  // The capacity is the instance's: 4 x 80 GiB at 0.8 less 141 GB of weights.
  assert.equal(instanceKvMemory(preset.instance).kvCapacityTokens, preset.kvCapacityTokens);
});

/** Every roofline:MODEL@GPUxTPpPP of the catalog (TP 1..8, PP 1..4) that fits, with its GPU count. */
function parallelPresets(): { name: string; gpus: number }[] {
  const presets: { name: string; gpus: number }[] = [];
  for (const model of modelNames()) {
    for (const gpu of gpuNames()) {
      for (const pp of [1, 2, 4]) {
        for (const tp of [1, 2, 4, 8]) {
          const name = `roofline:${model}@${gpu}x${tp}p${pp}`;
          try {
            costModelPreset(name);
          } catch {
            continue;
          }
          presets.push({ name, gpus: tp * pp });
        }
      }
    }
  }
  return presets;
}

test('tensor and pipeline parallel rooflines with at most twice the GPUs they need: within the same bounds', () => {
  const all = parallelPresets();
  const fewest = new Map<string, number>();
  for (const { name, gpus } of all) {
    const key = name.slice(0, name.lastIndexOf('x'));
    fewest.set(key, Math.min(fewest.get(key) ?? gpus, gpus));
  }
  let checked = 0;
  for (const { name, gpus } of all) {
    const preset = costModelPreset(name);
    const violations = decodeBoundViolations(preset, preset.instance, preset.kvCapacityTokens);
    if (gpus <= 2 * fewest.get(name.slice(0, name.lastIndexOf('x')))!) {
      assert.deepEqual(violations, [], name);
      checked += 1;
    } else {
      // Over-provisioned: still never below the floor.
      assert.ok(
        violations.every((line) => !line.includes('(0.')),
        violations.join('\n'),
      );
    }
  }
  assert.ok(checked > 100, `${checked}`);
  // The over-provisioned case the bound leaves out: 7B on 8 H200, fixed costs over a 0.4 ms floor.
  const small = costModelPreset('roofline:mistral-7b@h200x8');
  assert.ok(decodeBoundViolations(small, small.instance, small.kvCapacityTokens).length > 0);
});
