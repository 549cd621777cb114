import assert from 'node:assert/strict';
import { test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { renderReport } from '../../src/experiments/report.ts';
import { runCells } from '../../src/experiments/runner.ts';
import type { Cell, Experiment } from '../../src/experiments/types.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { seq } from '../helpers/simple-cost-model.ts';

test("an experiment's report says how many requests of a panel were refused", () => {
  // 300 tokens of KV per instance: the 400-token prompt fits none.
  const requests = (): WorkloadRequest[] =>
    [100, 400, 200].map((prompt, k) => ({
      id: `r${k}`,
      arrival: k * 0.5,
      tokens: seq(prompt, 1000 * k),
      outputTokens: 4,
      workload: 'test',
    }));
  const cell = (series: string, kvCapacityTokens = 300): Cell => ({
    panel: 'tiny',
    series,
    spec: {
      policy: series,
      workload: 'test',
      instances: 2,
      rps: 2,
      costModel: costModelPreset('mistral-7b-a6000', { kvCapacityTokens }),
      requests,
      seed: 0,
    },
  });
  const experiment: Experiment = {
    name: 'tiny',
    title: 'Tiny',
    defaultRequests: 3,
    cells: () => [],
    discuss: () => '',
  };
  const results = runCells([cell('round-robin'), cell('e2-plus')]);
  const { markdown } = renderReport(experiment, results, { command: 'test' });
  assert.match(
    markdown,
    /Refused, their prompt and output larger than the KV of every instance or of every one the policy would pick \(left out of every figure below\): 2 rps: 1 of 3\./,
  );
  // Series that refused different counts are each named.
  const mixed = runCells([cell('round-robin'), cell('e2-plus', 1000)]);
  assert.match(
    renderReport(experiment, mixed, { command: 'test' }).markdown,
    /below\): 2 rps: round-robin 1 of 3, e2-plus 0 of 3\./,
  );
});
