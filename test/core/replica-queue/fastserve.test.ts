import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createFastServePolicy,
  fastServeDefaults,
  fastServeLevel,
} from '../../../src/core/replica-queue/fastserve.ts';
import type { QueuedRequest, RunningRequest } from '../../../src/core/replica-queue/types.ts';
import { ctx, ids, req } from './helpers.ts';

// Top quantum 4 tokens (then 8, 16, ...); a prefill of 100 prompt tokens is one decode step.
const options = { levels: 4, quantumTokens: 4, prefillTokensPerStep: 100, starveSeconds: 5 };
const o = { ...fastServeDefaults, ...options };
const generated = (r: QueuedRequest, tokens: number, input = r.promptTokens): QueuedRequest => ({
  ...r,
  generatedTokens: tokens,
  inputTokens: input,
});
const running = (id: string, input: number, tokens: number, enqueuedAt = 0): RunningRequest => ({
  id,
  enqueuedAt,
  preemptions: 0,
  inputTokens: input,
  generatedTokens: tokens,
});

describe('fastserve queue policy', () => {
  it('skip-join: a prompt joins the highest level whose quantum covers its prefill', () => {
    // 400 tokens = 4 steps: level 0 (quantum 4); 401-800 = up to 8 steps: level 1; past 1600: level 3.
    assert.deepEqual(
      [100, 400, 401, 800, 1600, 1601, 100_000].map((n) => fastServeLevel({ promptTokens: n }, o)),
      [0, 0, 1, 1, 2, 3, 3],
    );
  });

  it('demotes after each level quantum of output tokens, quanta doubling, the last level keeping all', () => {
    const short = { promptTokens: 10 };
    // Level 0 for 4 tokens, level 1 for the next 8, level 2 for the next 16, then level 3 for good.
    assert.deepEqual(
      [0, 3, 4, 11, 12, 27, 28, 10_000].map((g) => fastServeLevel({ ...short, generatedTokens: g }, o)),
      [0, 0, 1, 1, 2, 2, 3, 3],
    );
    // A long prompt joined at level 1 spends its first 8 tokens there.
    assert.equal(fastServeLevel({ promptTokens: 700, generatedTokens: 7 }, o), 1);
    assert.equal(fastServeLevel({ promptTokens: 700, generatedTokens: 8 }, o), 2);
    // A recomputation makes promptTokens prompt + output; the level reads the client's prompt.
    assert.equal(fastServeLevel({ promptTokens: 800, inputTokens: 100, generatedTokens: 3 }, o), 0);
  });

  it('admits by level, queue order within a level', () => {
    const policy = createFastServePolicy(options);
    const waiting = [
      req('long', 1000, 0, 1),
      generated(req('demoted', 50, 0, 2), 5),
      req('short', 50, 0, 3),
      req('short2', 60, 0, 4),
    ];
    assert.deepEqual(ids(policy.select(waiting, ctx({ now: 4 }))), ['short', 'short2', 'demoted', 'long']);
  });

  it('promotes a request that waited starveSeconds to the top level', () => {
    const policy = createFastServePolicy(options);
    const waiting = [req('old-long', 1000, 0, 0), req('short', 50, 0, 4)];
    assert.deepEqual(ids(policy.select(waiting, ctx({ now: 4.9 }))), ['short', 'old-long']);
    assert.deepEqual(ids(policy.select(waiting, ctx({ now: 5 }))), ['old-long', 'short']);
    // A preempted request's wait counts from its preemption.
    const back = { ...req('back', 1000, 0, 0), preemptions: 1, preemptedAt: 3 };
    assert.equal(policy.priority!(back, 7.9), 2);
    assert.equal(policy.priority!(back, 8), 0);
  });

  it('stops at the first request in its order that does not fit (head-of-line)', () => {
    const policy = createFastServePolicy(options);
    const waiting = [req('small-low', 50, 0, 1), req('big-top', 300, 0, 2)];
    const low = generated(waiting[0]!, 100);
    const picked = policy.select([low, waiting[1]!], ctx({ now: 2, freeKvTokens: 200 }));
    assert.deepEqual(ids(picked), []);
  });

  it('preempts only lower-level running requests for a better waiting one, lowest level first', () => {
    const policy = createFastServePolicy(options);
    const waiting = [req('new', 300, 0, 10)];
    const decodes = [
      running('top', 50, 1, 1), // level 0: not below the target's level 0
      running('mid', 50, 5, 2), // level 1
      running('low', 50, 30, 3), // level 3
      running('low-young', 50, 40, 9), // level 3, younger
    ];
    const plan = policy.preemptFor!(waiting, decodes, ctx({ now: 10, freeKvTokens: 100 }));
    assert.equal(plan?.target.id, 'new');
    assert.equal(plan?.kvTokens, 300);
    assert.deepEqual(
      plan?.victims.map((v) => v.id),
      ['low-young', 'low', 'mid'],
    );
  });

  it('preempts nothing for a waiting request no better than every running one', () => {
    const policy = createFastServePolicy(options);
    const waiting = [generated(req('demoted', 300, 0, 10), 50)];
    const plan = policy.preemptFor!(waiting, [running('d', 50, 50, 1)], ctx({ now: 10, freeKvTokens: 0 }));
    assert.equal(plan, undefined);
  });

  it('refuses bad options', () => {
    assert.throws(() => createFastServePolicy({ levels: 0 }), /levels/);
    assert.throws(() => createFastServePolicy({ quantumTokens: 0 }), /quantumTokens/);
    assert.throws(() => createFastServePolicy({ prefillTokensPerStep: 0 }), /prefillTokensPerStep/);
    assert.throws(() => createFastServePolicy({ starveSeconds: 0 }), /starveSeconds/);
  });
});
