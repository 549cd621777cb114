import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { baseWorkloadNames } from '../../src/workloads/base-workloads.ts';
import { createWorkload } from '../../src/workloads/registry.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { workingSet } from '../../src/workloads/working-set.ts';
import { fingerprint, startsWith } from './helpers.ts';

const at = (workload: string, instances: number, requests = 3000): WorkloadRequest[] => [
  ...createWorkload(workload, { requests, rps: 3 * instances, seed: 5, instances }),
];

describe('working sets scale with the cluster (the authors scale theirs per 2 GPUs)', () => {
  for (const name of baseWorkloadNames) {
    it(`${name}: twice the instances, at least 1.4x the live shared-prefix tokens`, () => {
      // Programming's 320 open problems on 4 instances take 5,120 arrivals to go round once.
      const requests = name === 'programming' ? 6000 : 3000;
      const two = workingSet(at(name, 2, requests)).meanTokens;
      const four = workingSet(at(name, 4, requests)).meanTokens;
      assert.ok(four >= 1.4 * two, `${name}: ${two} tokens on 2 instances, ${four} on 4`);
    });
  }

  it('an explicit working set ignores the cluster size (toolbench:zipf=1.1,tools=300)', () => {
    const two = at('toolbench:zipf=1.1,tools=300', 2, 1000);
    const four = at('toolbench:zipf=1.1,tools=300', 4, 1000);
    assert.deepEqual(
      two.map((r) => Array.from(r.tokens)),
      four.map((r) => Array.from(r.tokens)),
    );
  });

  it('is deterministic by seed, and differs by cluster size', () => {
    for (const name of baseWorkloadNames) {
      assert.deepEqual(fingerprint(at(name, 4, 200)), fingerprint(at(name, 4, 200)));
      assert.notDeepEqual(fingerprint(at(name, 2, 200)), fingerprint(at(name, 4, 200)));
    }
  });
});

describe('workingSet', () => {
  const req = (tokens: number[], arrival: number) => ({ tokens: Uint32Array.from(tokens), arrival });

  it('counts a shared prefix once, while it is live, and nothing unshared', () => {
    const ws = workingSet([
      req([1, 2, 3, 4, 9], 0),
      req([1, 2, 3, 4, 8], 10),
      req([1, 2, 7], 5),
      req([5, 6], 0),
    ]);
    // [1 2] is live over 0-10 (three prompts), [3 4] over 0-10 (two): 4 tokens for the whole span.
    assert.deepEqual(ws, { meanTokens: 4, peakTokens: 4, distinctSharedTokens: 4 });
  });

  it('averages over time: a prefix reused only in the first half counts half', () => {
    const ws = workingSet([req([1, 1, 1, 1, 2], 0), req([1, 1, 1, 1, 3], 5), req([9], 10)]);
    assert.deepEqual(ws, { meanTokens: 2, peakTokens: 4, distinctSharedTokens: 4 });
  });
});

describe('programming: two timings, the authors\u2019 sizes and caps', () => {
  const sessions = (requests: readonly WorkloadRequest[]) => requests.map((r) => r.sessionId);

  it('shuffled (default) spreads a problem over the run; bursts sends its samples one after another', () => {
    const shuffled = at('programming', 2, 2000);
    const bursts = at('programming:order=bursts', 2, 2000);
    assert.deepEqual(
      sessions(bursts).slice(0, 32),
      Array.from({ length: 32 }, (_, n) => `programming-problem-${Math.floor(n / 16)}`),
    );
    // Spread: positions from a problem's first sample to its last, over the problems completed.
    const spread = (requests: readonly WorkloadRequest[]) => {
      const first = new Map<string, number>();
      const spans: number[] = [];
      const count = new Map<string, number>();
      requests.forEach((r, n) => {
        const id = r.sessionId!;
        if (!first.has(id)) first.set(id, n);
        count.set(id, (count.get(id) ?? 0) + 1);
        if (count.get(id) === 16) spans.push(n - first.get(id)!);
      });
      return spans.reduce((a, b) => a + b, 0) / spans.length;
    };
    assert.equal(spread(bursts), 15);
    // 160 problems open on 2 instances: a problem's 16 samples span ~a thousand arrivals.
    assert.ok(spread(shuffled) > 500, `shuffled spread ${spread(shuffled)}`);
  });

  it('uses the 2400-token demonstration and caps outputs at 512 (max_tokens), in both timings', () => {
    for (const workload of ['programming', 'programming:order=bursts']) {
      const requests = at(workload, 2, 1500);
      const demonstration = requests[0]!.tokens.slice(0, 2400);
      assert.ok(requests.every((r) => startsWith(r.tokens, demonstration)));
      assert.ok(requests.every((r) => r.maxTokens === 512 && r.outputTokens <= 512));
      assert.ok(
        requests.some((r) => r.outputTokens === 512),
        'the lognormal tail is cut at the cap',
      );
      const prompt = requests.reduce((s, r) => s + r.tokens.length, 0) / requests.length;
      assert.ok(prompt > 3400 && prompt < 4300, `mean prompt ${prompt} (Table 1: 3871)`);
    }
  });

  it('keeps the earlier sizes as options: demo=680,maxOutput=8192', () => {
    const requests = at('programming:order=bursts,demo=680,maxOutput=8192', 2, 1500);
    assert.ok(requests.every((r) => r.maxTokens === 8192 && r.outputTokens <= 8192));
    assert.ok(requests.some((r) => r.outputTokens > 512));
    assert.ok(startsWith(requests[100]!.tokens, requests[0]!.tokens.slice(0, 680)));
    assert.ok(!startsWith(requests[100]!.tokens, requests[0]!.tokens.slice(0, 700)));
  });
});
