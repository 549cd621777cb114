import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createPriorityGroupsPolicy } from '../../src/core/replica-queue/priority-groups.ts';
import { Engine } from '../../src/engine/engine.ts';
import { concat, drive, EASY, linearCost, seq, type TimedRequest } from './helpers.ts';

describe('Engine: queue policies', () => {
  const X = seq(300, 1);
  // a caches X; d holds the only batch slot while b (nothing cached) and then c (300 of 310 cached) queue.
  const stream: TimedRequest[] = [
    { id: 'a', tokens: concat(X, seq(10, 10_000)), outputTokens: 1, arrival: 0 },
    { id: 'd', tokens: seq(10, 50_000), outputTokens: 20, arrival: 1 },
    { id: 'b', tokens: seq(100, 20_000), outputTokens: 1, arrival: 2 },
    { id: 'c', tokens: concat(X, seq(10, 30_000)), outputTokens: 1, arrival: 3 },
  ];
  const startOrder = (engine: Engine) =>
    drive(engine, stream).steps.flatMap((s) =>
      s.iteration.events.started.map((x) => `${x.id}:${x.cachedTokens}`),
    );

  it('priority-groups admits the request with the larger cached share first', () => {
    // One place: group 9 (c, 97% cached) has weight 10 against group 0's (b) 1, so c takes it.
    const engine = new Engine({ costModel: linearCost(EASY), queuePolicy: 'priority-groups', maxRunning: 1 });
    assert.deepEqual(startOrder(engine), ['a:0', 'd:0', 'c:300', 'b:0']);
  });

  it('fcfs admits in arrival order', () => {
    const engine = new Engine({ costModel: linearCost(EASY), queuePolicy: 'fcfs', maxRunning: 1 });
    assert.deepEqual(startOrder(engine), ['a:0', 'd:0', 'b:0', 'c:300']);
  });

  it('takes a policy instance and policy options', () => {
    const instance = new Engine({
      costModel: linearCost(EASY),
      queuePolicy: createPriorityGroupsPolicy({ groups: 4 }),
    });
    assert.equal(instance.queuePolicy.name, 'priority-groups');
    assert.throws(
      () =>
        new Engine({
          costModel: linearCost(EASY),
          queuePolicy: 'priority-groups',
          queuePolicyOptions: { groups: 0 },
        }),
      /groups/,
    );
    assert.throws(
      () => new Engine({ costModel: linearCost(EASY), chunkedPrefillTokens: 0 }),
      /chunkedPrefillTokens/,
    );
    assert.throws(() => new Engine({ costModel: linearCost(EASY), maxRunning: 1.5 }), /maxRunning/);
    const defaults = new Engine({ costModel: linearCost(EASY, 12_345) });
    assert.deepEqual(
      [
        defaults.queuePolicy.name,
        defaults.chunkedPrefillTokens,
        defaults.maxRunning,
        defaults.kvCapacityTokens,
      ],
      ['fcfs', 512, 256, 12_345],
    );
  });
});
