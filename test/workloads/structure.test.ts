import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { embodiedAgent } from '../../src/workloads/embodied-agent.ts';
import { loogle } from '../../src/workloads/loogle.ts';
import { programming } from '../../src/workloads/programming.ts';
import { createWorkload, workloadNames } from '../../src/workloads/registry.ts';
import { analyzePrefixSharing } from '../../src/workloads/stats.ts';
import { VOCABULARY_SIZE } from '../../src/workloads/tokens.ts';
import { toolbench } from '../../src/workloads/toolbench.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { videoQa } from '../../src/workloads/video-qa.ts';
import { startsWith } from './helpers.ts';

const common = { rps: 10, seed: 11 };

function commonPrefix(a: Uint32Array, b: Uint32Array): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

function bySession(requests: readonly WorkloadRequest[]): Map<string, WorkloadRequest[]> {
  const sessions = new Map<string, WorkloadRequest[]>();
  for (const r of requests) {
    assert.ok(r.sessionId, `${r.id} has a session`);
    sessions.set(r.sessionId, [...(sessions.get(r.sessionId) ?? []), r]);
  }
  return sessions;
}

describe('every workload emits well-formed requests', () => {
  for (const name of workloadNames) {
    it(name, () => {
      const requests = [...createWorkload(name, { ...common, requests: 300 })];
      assert.equal(new Set(requests.map((r) => r.id)).size, 300);
      for (const [n, r] of requests.entries()) {
        if (name !== 'mixed') assert.equal(r.id, `${name}-${n}`);
        if (name !== 'mixed') assert.equal(r.workload, name);
        assert.ok(Number.isInteger(r.outputTokens) && r.outputTokens >= 1);
        assert.ok(r.tokens instanceof Uint32Array && r.tokens.length > 0);
        assert.ok(r.tokens.every((t) => t < VOCABULARY_SIZE));
      }
      // No two requests alias one buffer: shared blocks are copied.
      assert.equal(new Set(requests.map((r) => r.tokens.buffer)).size, 300);
    });
  }
});

describe('toolbench', () => {
  const toolKey = (r: WorkloadRequest) => r.tokens.slice(160, 168).join(',');

  it('shares one system prompt and one block per tool', () => {
    const requests = [...toolbench({ ...common, requests: 400, tools: 5 })];
    const system = requests[0]!.tokens.slice(0, 160);
    assert.ok(requests.every((r) => startsWith(r.tokens, system)));
    assert.ok(new Set(requests.map(toolKey)).size <= 5);
    // Requests of one tool share the whole tool block, so far more than the system prompt.
    const sameTool = requests.filter((r) => toolKey(r) === toolKey(requests[0]!));
    assert.ok(commonPrefix(sameTool[0]!.tokens, sameTool[1]!.tokens) >= 200);
  });

  it('skews tool popularity under zipf and not under uniform', () => {
    const topShare = (popularity: 'zipf' | 'uniform') => {
      const counts = new Map<string, number>();
      for (const r of toolbench({ ...common, requests: 2000, tools: 100, popularity })) {
        counts.set(toolKey(r), (counts.get(toolKey(r)) ?? 0) + 1);
      }
      return Math.max(...counts.values()) / 2000;
    };
    // Zipf(1.1) over 100 ranks gives the top tool ~21%; uniform gives 1% (a max of 100 counts: < 3%).
    assert.ok(topShare('zipf') > 0.15);
    assert.ok(topShare('uniform') < 0.03);
  });

  it('rejects bad options', () => {
    assert.throws(() => toolbench({ ...common, requests: 1, tools: 0 }), /tools/);
    assert.throws(() => toolbench({ ...common, requests: 1, zipfExponent: 0 }), /zipfExponent/);
    assert.throws(() => toolbench({ ...common, requests: -1 }), /requests/);
    assert.throws(() => toolbench({ ...common, requests: 1, rps: 0 }), /rps/);
  });
});

describe('embodied-agent', () => {
  const requests = [...embodiedAgent({ ...common, requests: 1500 })];
  const sessions = bySession(requests);

  it("step k+1's prompt is step k's whole prompt + its output + an observation", () => {
    for (const steps of sessions.values()) {
      for (let k = 1; k < steps.length; k++) {
        const [previous, next] = [steps[k - 1]!, steps[k]!];
        assert.ok(startsWith(next.tokens, previous.tokens), `${next.id} extends ${previous.id}`);
        assert.ok(next.tokens.length >= previous.tokens.length + previous.outputTokens + 1);
      }
    }
  });

  it('interleaves chains, all behind one shared instruction', () => {
    const switches = requests.filter((r, i) => i > 0 && r.sessionId !== requests[i - 1]!.sessionId).length;
    assert.ok(switches > requests.length / 2, 'consecutive requests mostly come from different chains');
    assert.ok(sessions.size > 16);
    const instruction = requests[0]!.tokens.slice(0, 40);
    assert.ok(requests.every((r) => startsWith(r.tokens, instruction)));
  });

  it('draws the steps per chain around meanSteps', () => {
    const chains = [
      ...bySession([...embodiedAgent({ ...common, requests: 4000, activeChains: 1 })]).values(),
    ];
    const complete = chains.slice(0, -1).map((c) => c.length);
    const mean = complete.reduce((a, b) => a + b) / complete.length;
    assert.ok(Math.abs(mean - 48) < 5, `mean steps ${mean}`);
  });
});

describe('programming', () => {
  it('under order=bursts sends the samples of a problem consecutively, behind one demonstration', () => {
    const requests = [
      ...programming({
        ...common,
        requests: 100,
        samplesPerProblem: 8,
        order: 'bursts',
        demonstrationTokens: 680,
      }),
    ];
    for (const [n, r] of requests.entries())
      assert.equal(r.sessionId, `programming-problem-${Math.floor(n / 8)}`);
    const demonstration = requests[0]!.tokens.slice(0, 680);
    assert.ok(requests.every((r) => startsWith(r.tokens, demonstration)));
    // Samples share demonstration + problem; prompts still differ (a per-sample instruction).
    assert.ok(commonPrefix(requests[0]!.tokens, requests[1]!.tokens) >= 680 + 40);
    assert.ok(commonPrefix(requests[0]!.tokens, requests[8]!.tokens) < 700);
    assert.notDeepEqual(requests[0]!.tokens, requests[1]!.tokens);
  });
});

describe('video-qa', () => {
  it('asks one question per 1024 video tokens about a video, the video being 99% of the prompt', () => {
    const requests = [...videoQa({ ...common, requests: 600, activeVideos: 1, oneOffShare: 0 })];
    const videos = [...bySession(requests).values()].slice(0, -1);
    for (const questions of videos) {
      if (questions.length < 2) continue;
      const video = commonPrefix(questions[0]!.tokens, questions[1]!.tokens);
      assert.equal(video % 256, 0, 'whole frames of 256 tokens');
      assert.equal(questions.length, Math.max(1, Math.round(video / 1024)));
      assert.ok(questions.every((q) => q.tokens.length - video < 0.1 * video));
    }
  });

  it('asks about one-off videos once', () => {
    const requests = [...videoQa({ ...common, requests: 300, oneOffShare: 1 })];
    assert.equal(bySession(requests).size, 300);
    assert.ok(analyzePrefixSharing(requests.map((r) => r.tokens)).every((s) => s.sharedPrefix <= 1));
  });
});

describe('loogle', () => {
  it('puts a 13-token system prompt and the document before every question', () => {
    const requests = [...loogle({ ...common, requests: 200, activeDocuments: 4 })];
    const system = requests[0]!.tokens.slice(0, 13);
    assert.ok(requests.every((r) => startsWith(r.tokens, system)));
    for (const questions of bySession(requests).values()) {
      for (const q of questions.slice(1))
        assert.ok(commonPrefix(q.tokens, questions[0]!.tokens) >= 13 + 2000);
    }
  });
});

describe('bad options throw when the workload is created, not when it is read', () => {
  const base = { ...common, requests: 1 };
  const cases: [string, () => unknown, RegExp][] = [
    ['activeChains', () => embodiedAgent({ ...base, activeChains: 0 }), /activeChains/],
    ['meanSteps', () => embodiedAgent({ ...base, meanSteps: 0 }), /meanSteps/],
    ['samplesPerProblem', () => programming({ ...base, samplesPerProblem: 1.5 }), /samplesPerProblem/],
    ['activeVideos', () => videoQa({ ...base, activeVideos: 0 }), /activeVideos/],
    ['oneOffShare', () => videoQa({ ...base, oneOffShare: 2 }), /oneOffShare/],
    ['tokensPerQuestion', () => videoQa({ ...base, tokensPerQuestion: 0 }), /tokensPerQuestion/],
    ['activeDocuments', () => loogle({ ...base, activeDocuments: -1 }), /activeDocuments/],
    ['seed', () => loogle({ ...base, seed: Number.NaN }), /seed/],
  ];
  for (const [label, create, message] of cases) it(label, () => assert.throws(create, message));
});
