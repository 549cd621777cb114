import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createQueuePolicy,
  isQueuePolicyName,
  queuePolicyNames,
} from '../../../src/core/replica-queue/index.ts';
import { ctx, ids, req } from './helpers.ts';

describe('createQueuePolicy', () => {
  it('creates every named policy', () => {
    assert.deepEqual(
      [...queuePolicyNames],
      [
        'fcfs',
        'lpm',
        'priority-groups',
        'larry',
        'no-preempt',
        'splitwise-mixed',
        'trail',
        'ltr',
        's3',
        'pia',
      ],
    );
    for (const name of queuePolicyNames) {
      const policy = createQueuePolicy(name);
      assert.equal(policy.name, name);
      assert.equal(policy.preempts, name !== 'no-preempt');
      assert.ok(isQueuePolicyName(name));
    }
  });

  it('rejects an unknown name, listing the valid ones', () => {
    assert.equal(isQueuePolicyName('sjf'), false);
    assert.throws(
      () => createQueuePolicy('sjf'),
      (error: Error) =>
        queuePolicyNames.every((name) => error.message.includes(name)) && error.message.includes('sjf'),
    );
  });

  it('passes each policy its options', () => {
    assert.throws(() => createQueuePolicy('larry', { alpha: -1 }), /alpha/);
    assert.throws(() => createQueuePolicy('priority-groups', { groups: 0 }), /groups/);
    assert.equal(
      createQueuePolicy('no-preempt', { defaultMaxOutputTokens: 5 }).reserveTokens({
        id: 'a',
        enqueuedAt: 0,
        promptTokens: 10,
        cachedTokens: 0,
      }),
      5,
    );
  });

  it('takes an option given as undefined as its default, for every policy and option', () => {
    const waiting = Array.from({ length: 40 }, (_, i) =>
      req(`r${i}`, 100 + 37 * (i % 7), 20 * (i % 5), i * 0.5, i % 3 === 0 ? undefined : 64),
    );
    const context = ctx({ freeKvTokens: 2500, kvCapacityTokens: 4000, tokenBudget: 900, maxRequests: 12 });
    const keys = [
      'groups',
      'alpha',
      'defaultMaxOutputTokens',
      'maxContextTokens',
      'agingSeconds',
      'maxPreemptions',
    ] as const;
    for (const name of queuePolicyNames) {
      const reference = ids(createQueuePolicy(name).select(waiting, context));
      for (const key of keys) {
        assert.deepEqual(
          ids(createQueuePolicy(name, { [key]: undefined }).select(waiting, context)),
          reference,
          `${name}.${key}`,
        );
      }
    }
  });
});
