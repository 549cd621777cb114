import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mixed } from '../../src/workloads/mixed.ts';
import { createWorkload, isWorkloadName, workloadNames } from '../../src/workloads/registry.ts';
import { startsWith } from './helpers.ts';

const common = { rps: 10, seed: 4 };

describe('registry', () => {
  it("names the paper's six workloads, DistServe's three applications and multi-turn chat", () => {
    assert.deepEqual(
      [...workloadNames],
      [
        'toolbench',
        'embodied-agent',
        'programming',
        'video-qa',
        'loogle',
        'mixed',
        'sharegpt-like',
        'humaneval-like',
        'longbench-like',
        'conversation',
      ],
    );
    assert.ok(isWorkloadName('loogle'));
    assert.ok(!isWorkloadName('azure'));
  });

  it('throws on an unknown name, listing the valid ones', () => {
    assert.throws(
      () => createWorkload('sharegpt', { ...common, requests: 1 }),
      (error: Error) =>
        workloadNames.every((name) => error.message.includes(name)) && error.message.includes('sharegpt'),
    );
  });

  it('passes generator options through', () => {
    const requests = [
      ...createWorkload('programming', { ...common, requests: 12, samplesPerProblem: 3, order: 'bursts' }),
    ];
    assert.equal(new Set(requests.map((r) => r.sessionId)).size, 4);
  });

  it('reads NAME:KEY=VALUE options, which override the same options given apart', () => {
    const spelled = [...createWorkload('programming:order=bursts,samples=3', { ...common, requests: 12 })];
    const given = [
      ...createWorkload('programming', { ...common, requests: 12, samplesPerProblem: 3, order: 'bursts' }),
    ];
    assert.deepEqual(
      spelled.map((r) => Array.from(r.tokens)),
      given.map((r) => Array.from(r.tokens)),
    );
    const zipf = [...createWorkload('toolbench:zipf=1.1,tools=300', { ...common, requests: 50, tools: 7 })];
    const same = [
      ...createWorkload('toolbench', {
        ...common,
        requests: 50,
        popularity: 'zipf',
        zipfExponent: 1.1,
        tools: 300,
      }),
    ];
    assert.deepEqual(
      zipf.map((r) => Array.from(r.tokens)),
      same.map((r) => Array.from(r.tokens)),
    );
    assert.throws(
      () => createWorkload('toolbench:tool=3', { ...common, requests: 1 }),
      /tools, popularity, zipf/,
    );
    assert.throws(
      () => createWorkload('programming:order=random', { ...common, requests: 1 }),
      /shuffled, bursts/,
    );
    assert.throws(() => createWorkload('loogle:documents=0', { ...common, requests: 1 }), /positive integer/);
  });
});

describe('mixed', () => {
  it('interleaves all five workloads by default, keeping their fields', () => {
    const requests = [...mixed({ ...common, requests: 500 })];
    const workloads = new Set(requests.map((r) => r.workload));
    assert.deepEqual([...workloads].sort(), [
      'embodied-agent',
      'loogle',
      'programming',
      'toolbench',
      'video-qa',
    ]);
    assert.equal(new Set(requests.map((r) => r.id)).size, 500);
    assert.ok(requests.every((r) => r.id.startsWith(`${r.workload}-`)));
  });

  it('follows the weights and keeps each component in order', () => {
    const requests = [
      ...mixed({
        ...common,
        requests: 2000,
        components: [
          { name: 'toolbench', weight: 3 },
          { name: 'embodied-agent' },
          { name: 'loogle', weight: 0 },
        ],
      }),
    ];
    const tools = requests.filter((r) => r.workload === 'toolbench').length;
    assert.ok(Math.abs(tools / 2000 - 0.75) < 0.04, `toolbench share ${tools / 2000}`);
    assert.ok(requests.every((r) => r.workload !== 'loogle'));
    // The agent's chains still grow step by step.
    const last = new Map<string, Uint32Array>();
    for (const r of requests.filter((r) => r.workload === 'embodied-agent')) {
      const previous = last.get(r.sessionId!);
      if (previous) assert.ok(startsWith(r.tokens, previous));
      last.set(r.sessionId!, r.tokens);
    }
  });

  it('rejects duplicate, unknown or all-zero components', () => {
    assert.throws(
      () => mixed({ ...common, requests: 1, components: [{ name: 'loogle' }, { name: 'loogle' }] }),
      /twice/,
    );
    // @ts-expect-error: not a base workload
    assert.throws(() => mixed({ ...common, requests: 1, components: [{ name: 'mixed' }] }), /valid/);
    assert.throws(
      () => mixed({ ...common, requests: 1, components: [{ name: 'loogle', weight: 0 }] }),
      /zero/,
    );
    assert.throws(() => mixed({ ...common, requests: 1, components: [] }), /at least one/);
  });
});

describe('mixed component options', () => {
  it('are checked when the mix is created', () => {
    assert.throws(
      () => mixed({ ...common, requests: 1, components: [{ name: 'toolbench', options: { tools: 0 } }] }),
      /tools/,
    );
  });

  it('reach the component', () => {
    const requests = [
      ...mixed({
        ...common,
        requests: 40,
        components: [{ name: 'programming', options: { samplesPerProblem: 4, order: 'bursts' } }],
      }),
    ];
    assert.equal(new Set(requests.map((r) => r.sessionId)).size, 10);
  });
});
