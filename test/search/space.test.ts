import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { configurationInstances, enumerateSpace, type SearchSpace } from '../../src/search/space.ts';

const space: SearchSpace = {
  model: 'llama3-70b',
  gpus: ['a100', 'h100'],
  tensorParallel: [1, 2, 4, 8],
  pipelineParallel: [1],
  maxRunning: [32, 64],
  chunkTokens: [512],
  queuePolicies: ['fcfs', 'lpm'],
  policies: ['e2'],
  layouts: [{ kind: 'colocated', replicas: 1 }],
};

describe('enumerateSpace', () => {
  test('lists the product of the dimensions, leaving out splits the model does not fit', () => {
    const { configurations, skipped, reasons } = enumerateSpace(space);
    // llama3-70b (about 140 GB of weights) does not fit one 80 GB GPU.
    assert.equal(configurations.length + skipped, 2 * 4 * 2 * 2);
    assert.ok(configurations.every((c) => c.tensorParallel >= 2));
    assert.ok(reasons.some((r) => r.startsWith('a100 tp1')));
    assert.equal(new Set(configurations.map((c) => JSON.stringify(c))).size, configurations.length);
  });

  test('--max-gpus leaves out larger configurations, disaggregated layouts count both roles', () => {
    const small = enumerateSpace({
      ...space,
      model: 'llama3-8b',
      maxGpus: 2,
      layouts: [
        { kind: 'colocated', replicas: 1 },
        { kind: 'disaggregated', prefill: 1, decode: 1 },
      ],
    });
    for (const c of small.configurations) {
      const gpus = configurationInstances('llama3-8b', c).reduce(
        (sum, i) => sum + (i.count ?? 1) * (i.tensorParallel ?? 1),
        0,
      );
      assert.ok(gpus <= 2, `${JSON.stringify(c)}: ${gpus} GPUs`);
    }
    assert.ok(
      small.configurations.some((c) => c.layout.kind === 'disaggregated' && c.policy === 'distserve'),
    );
  });
});
