import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFleetAction } from '../../src/cli/fleet-action.ts';

test('--fleet-action: add takes the --fleet shorthand, each letter alone; drain, remove and role take ids', () => {
  const added = parseFleetAction('at=60,add=2D1P', 'mistral-7b-a6000');
  assert.deepEqual(
    added.map((a) => [a.at, a.action, a.action === 'add' ? a.spec.role : undefined]),
    [
      [60, 'add', 'decode'],
      [60, 'add', 'decode'],
      [60, 'add', 'prefill'],
    ],
  );
  const [spec] = added.map((a) => (a.action === 'add' ? a.spec : undefined));
  assert.equal(spec?.costModel, 'mistral-7b-a6000');
  assert.deepEqual(parseFleetAction('at=1.5,drain=3', 'x'), [{ at: 1.5, action: 'drain', instance: 3 }]);
  assert.deepEqual(parseFleetAction('remove=0, at=0', 'x'), [{ at: 0, action: 'remove', instance: 0 }]);
  assert.deepEqual(parseFleetAction('at=30,role=2:mixed', 'x'), [
    { at: 30, action: 'role', instance: 2, role: 'mixed' },
  ]);
});

test('--fleet-action errors are one line naming the value', () => {
  const bad = (value: string, message: RegExp) =>
    assert.throws(() => parseFleetAction(value, 'mistral-7b-a6000'), message);
  bad('drain=3', /--fleet-action 'drain=3': expected at=SECONDS/);
  bad('at=-1,drain=3', /at: expected seconds >= 0/);
  bad('at=1,drain=3,remove=4', /expected at=SECONDS/);
  bad('at=1,drain=x', /drain: expected an instance id, got 'x'/);
  bad('at=1,role=2:big', /role: expected ID:ROLE/);
  bad('at=1,add=2Q', /add: expected counts with P, D or M/);
  bad('at=1,at=2', /'at' given twice/);
  bad('at=1,grow=3', /expected at=SECONDS/);
});
