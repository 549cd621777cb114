import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { fitVidurMlp } from '../../../scripts/fit-vidur.ts';
import {
  fittedPrefillMfu,
  rooflineLinearMs,
  seedRows,
  VIDUR_PROFILES,
} from '../../../scripts/validate-cost-model.ts';
import { layerMatrixParams } from '../../../src/core/cost-model/layer-weights.ts';
import { MODEL_SHAPES } from '../../../src/core/cost-model/model-shapes.ts';

const VIDUR_DIR = fileURLToPath(new URL('../../../../shared/data/vidur-profiling', import.meta.url));

test("the roofline of vidur's ops by hand: Llama-2-7B's matrices on one H100", () => {
  // 4 attention projections of 4096^2 and 3 MLP matrices of 4096 x 11008, 32 layers.
  assert.equal(layerMatrixParams(MODEL_SHAPES['llama2-7b']), 4 * 4096 * 4096 + 3 * 4096 * 11_008);
  assert.equal(layerMatrixParams(MODEL_SHAPES['opt-13b']), 4 * 5120 * 5120 + 2 * 5120 * 20_480);
  const params = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11_008);
  const memory = (1e3 * params * 2) / (3.35e12 * 0.7);
  assert.ok(Math.abs(rooflineLinearMs('llama2-7b', 'h100-80g', 1, 1) - memory) < 1e-9);
  const compute = (1e3 * 2 * params * 4096) / (4 * 989.5e12 * 0.45);
  assert.ok(Math.abs(rooflineLinearMs('llama2-7b', 'h100-80g', 4, 4096) - compute) < 1e-9);
});

test("the seeds' rows: DistServe's KV figure exactly, every prediction finite and positive", () => {
  const rows = seedRows();
  const kv = rows.find((r) => r.what.startsWith('OPT-66B'))!;
  assert.equal(kv.predicted, 1.125);
  for (const row of rows) assert.ok(Number.isFinite(row.predicted) && row.predicted > 0, row.what);
  // The all-reduces cost something wherever there is tensor parallelism.
  for (const row of rows.filter((r) => r.withoutComm !== undefined))
    assert.ok(row.predicted > row.withoutComm!);
});

test("vidur's profiles (skipped without ../shared/data): memory-bound TP 1 rows within 25%, a fitted MFU near 0.58", (t) => {
  if (!existsSync(VIDUR_DIR)) {
    t.skip('../shared/data/vidur-profiling is absent');
    return;
  }
  for (const profile of VIDUR_PROFILES) {
    const shape = MODEL_SHAPES[profile.model];
    const { tokens, ms } = fitVidurMlp(join(VIDUR_DIR, profile.path), 1, shape.layers);
    tokens.forEach((n, i) => {
      if (n > 64) return;
      const error = rooflineLinearMs(profile.model, profile.gpu, 1, n) / ms[i]! - 1;
      assert.ok(Math.abs(error) < 0.25, `${profile.model} ${n}: ${error}`);
    });
  }
  const mfu = fittedPrefillMfu(VIDUR_DIR);
  assert.ok(mfu > 0.55 && mfu < 0.62, `${mfu}`);
});
