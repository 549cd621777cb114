import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fleetFromFlag, readFleetFile } from '../../src/cli/fleet-file.ts';

const dir = mkdtempSync(join(tmpdir(), 'preble-fleet-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

test('a YAML fleet file: specs with counts and roles, the run model for specs without one', () => {
  const path = file(
    'fleet.yaml',
    [
      'network: ethernet-25g',
      'transferMode: layer-wise',
      'instances:',
      '  - role: prefill',
      '    count: 2',
      '  - role: decode',
      '    model: llama3-8b',
      '    gpu: h100',
      '    tensorParallel: 2',
      '    pricePerHour: 9.5',
      '',
    ].join('\n'),
  );
  const config = readFleetFile(path, 'llama2-7b-h100');
  assert.equal(config.network, 'ethernet-25g');
  assert.equal(config.transferMode, 'layer-wise');
  const fleet = fleetFromFlag(path, 'llama2-7b-h100');
  assert.deepEqual(
    fleet.instances.map((i) => [i.id, i.role, i.costModel, i.pricePerHour]),
    [
      [0, 'prefill', 'llama2-7b-h100', 4.75],
      [1, 'prefill', 'llama2-7b-h100', 4.75],
      [2, 'decode', 'roofline:llama3-8b@h100-80gx2', 9.5],
    ],
  );
  assert.equal(fleet.network.class, 'ethernet-25g');
});

test('a JSON fleet file, as a bare list of specs', () => {
  const path = file('fleet.json', JSON.stringify([{ model: 'mistral-7b-a6000', count: 3 }]));
  const fleet = fleetFromFlag(path, 'llama2-7b-h100');
  assert.deepEqual(
    fleet.instances.map((i) => i.costModel),
    ['mistral-7b-a6000', 'mistral-7b-a6000', 'mistral-7b-a6000'],
  );
});

test('file errors name the file and the field, in one line', () => {
  const bad = (text: string, name: string) => file(name, text);
  const cases: [string, RegExp][] = [
    [
      bad('instances:\n  - model: llama2-7b-h100\n    count: -2\n', 'count.yaml'),
      /count\.yaml: instances\.0\.count: Too small/,
    ],
    [
      bad('[{"model": "llama2-7b-h100", "tp": 2}]', 'tp.json'),
      /tp\.json: instances\.0\.tp: unknown field \(valid: role/,
    ],
    [bad('instances:\n  - role: prefill\n', 'nomodel.yaml'), /nomodel\.yaml: instances\.0\.model: required/],
    [bad('instances: [\n', 'broken.yaml'), /broken\.yaml: not valid YAML or JSON: /],
    [
      bad('just text', 'scalar.yaml'),
      /scalar\.yaml: expected a mapping with `instances`, or a list of instance specs/,
    ],
    [
      bad('- model: llama3-70b-h100\n  gpu: a6000\n', 'gpu.yaml'),
      /gpu\.yaml: instances\.0\.gpu: 'a6000' differs/,
    ],
    [
      bad('- role: decode\n  model: llama2-7b-h100\n', 'roles.yaml'),
      /roles\.yaml: instances: a fleet with decode instances needs prefill/,
    ],
  ];
  for (const [path, pattern] of cases) {
    assert.throws(
      // without a run model (readFleetFile alone), a spec that names none is refused
      () => (path.endsWith('nomodel.yaml') ? readFleetFile(path) : fleetFromFlag(path, 'llama2-7b-h100')),
      (error: unknown) => {
        assert.match((error as Error).message, pattern);
        assert.equal((error as Error).message.includes('\n'), false);
        return true;
      },
    );
  }
  assert.throws(
    () => fleetFromFlag(join(dir, 'missing.yaml'), 'llama2-7b-h100'),
    /^Error: cannot read fleet file .*missing\.yaml: ENOENT$/,
  );
});

test('--fleet: the shorthand, and its errors prefixed with the flag', () => {
  assert.deepEqual(
    fleetFromFlag('2P1D', 'mistral-7b-a6000').instances.map((i) => i.role),
    ['prefill', 'prefill', 'decode'],
  );
  assert.throws(
    () => fleetFromFlag('x', 'mistral-7b-a6000'),
    /^Error: --fleet: expected counts with P, D or M, e\.g\. 2P1D; got 'x'$/,
  );
  assert.throws(
    () => fleetFromFlag('2Q', 'mistral-7b-a6000'),
    /^Error: --fleet: expected counts with P, D or M, e\.g\. 2P1D; got '2Q'$/,
  );
  assert.throws(
    () => fleetFromFlag('3P', 'mistral-7b-a6000'),
    /^Error: --fleet: prefill \(P\) and decode \(D\) instances come together/,
  );
  assert.throws(
    () => fleetFromFlag('2M', 'nope'),
    /^Error: --fleet: instances\.0\.model: unknown cost-model preset "nope"/,
  );
});
