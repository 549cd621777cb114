import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildFleet, looksLikeFleetShorthand, parseFleetShorthand } from '../../../src/core/fleet/index.ts';

const roles = (text: string, model = 'mistral-7b-a6000') =>
  buildFleet(parseFleetShorthand(text, model)).instances.map((i) => i.role);

test('2P1D, 4M, 2P2D1M: counts of the run model, numbered in the order written', () => {
  assert.deepEqual(roles('2P1D'), ['prefill', 'prefill', 'decode']);
  assert.deepEqual(roles('4M'), ['mixed', 'mixed', 'mixed', 'mixed']);
  assert.deepEqual(roles('2P2D1M'), ['prefill', 'prefill', 'decode', 'decode', 'mixed']);
  assert.deepEqual(roles('1d1p'), ['decode', 'prefill']);
  assert.deepEqual(roles('12M').length, 12);
  const fleet = buildFleet(parseFleetShorthand('1P1D', 'roofline:llama3-8b@h100x2'));
  assert.deepEqual(
    fleet.instances.map((i) => [i.costModel, i.gpus, i.queuePolicy]),
    [
      ['roofline:llama3-8b@h100x2', 2, 'auto'],
      ['roofline:llama3-8b@h100x2', 2, 'auto'],
    ],
  );
});

test('bad shorthands are refused in one line', () => {
  const refused = (text: string, reason: RegExp) =>
    assert.throws(() => parseFleetShorthand(text, 'mistral-7b-a6000'), reason);
  const expected = (text: string) =>
    new RegExp(`^FleetSpecError: expected counts with P, D or M, e\\.g\\. 2P1D; got '${text}'$`);
  for (const text of ['x', '', 'P1D', '2P1', '2X', '2P 1D', '-1P', '1.5P', '2PD'])
    refused(text, expected(text));
  refused('2P1P', /P given twice in '2P1P'/);
  refused('0P1D', /a count must be at least 1; got 0P in '0P1D'/);
  refused('2P', /prefill \(P\) and decode \(D\) instances come together; got '2P'/);
  refused('1D1M', /come together; got '1D1M'/);
  assert.throws(
    () => buildFleet(parseFleetShorthand('1M', 'gpt-9')),
    /instances\.0\.model: unknown cost-model preset/,
  );
});

test('looksLikeFleetShorthand tells counts from file names', () => {
  for (const text of ['2P1D', '4M', '2X', '1p']) assert.equal(looksLikeFleetShorthand(text), true, text);
  for (const text of ['fleet.yaml', './2P1D', 'x', '', 'P1D'])
    assert.equal(looksLikeFleetShorthand(text), false, text);
});
