import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fleetFromFlag } from '../../src/cli/fleet-file.ts';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';

const dir = 'examples/fleets';

test('every example fleet builds, and the command in its comment names its own file', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
  assert.ok(files.length >= 2, `examples in ${dir}`);
  for (const f of files) {
    const path = join(dir, f);
    const fleet = fleetFromFlag(path, 'mistral-7b-a6000');
    assert.ok(fleet.instances.length > 0, path);
    assert.match(readFileSync(path, 'utf8'), new RegExp(`--fleet ${path.replaceAll('.', '\\.')}`), path);
  }
});

test('the mixed-GPU example: the H100 instances prefill and decode faster, the A6000 ones hold more KV', () => {
  const fleet = fleetFromFlag(join(dir, 'mixed-a6000-h100.yaml'), 'mistral-7b-a6000');
  assert.deepEqual(
    fleet.instances.map((i) => i.costModel),
    ['mistral-7b-a6000', 'mistral-7b-a6000', 'llama2-7b-h100', 'llama2-7b-h100'],
  );
  const a6000 = costModelPreset('mistral-7b-a6000');
  const h100 = costModelPreset('llama2-7b-h100');
  assert.ok(h100.prefillTime(8000, 0) < a6000.prefillTime(8000, 0) / 2);
  const step = (m: typeof a6000) =>
    m.iterationTime({ requests: 16, newTokens: 16, seqTokens: 16 * 4000, newTimesSeq: 16 * 4000 });
  assert.ok(step(h100) < step(a6000));
  assert.ok(a6000.kvCapacityTokens > 1.5 * h100.kvCapacityTokens);
});

test('the disaggregated example: two prefill and two decode instances, moved layer by layer', () => {
  const fleet = fleetFromFlag(join(dir, 'distserve-2p2d-h100.yaml'), 'mistral-7b-a6000');
  assert.deepEqual(
    fleet.instances.map((i) => i.role),
    ['prefill', 'prefill', 'decode', 'decode'],
  );
  assert.equal(fleet.transferMode, 'layer-wise');
});
