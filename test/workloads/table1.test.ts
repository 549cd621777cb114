import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { DistServeWorkloadName } from '../../src/workloads/distserve.ts';
import { type AnyWorkloadOptions, createWorkload, type WorkloadName } from '../../src/workloads/registry.ts';
import { type MeanStd, measureWorkload, type WorkloadStats } from '../../src/workloads/stats.ts';

/**
 * Each generator against the paper's Table 1, at fixed sizes and seed. Default bounds: length means
 * within 10%, share means within 5 percentage points, standard deviations within a factor of 2.
 * Wider bounds are the documented misfits (see each generator's comments).
 */
type Metric =
  | 'promptLength'
  | 'outputLength'
  | 'sharedPrefixShare'
  | 'keyPortionShare'
  | 'requestsSharingKeyPortion';
type Range = readonly [number, number];
interface Row {
  readonly target: readonly [number, number];
  readonly mean?: Range;
  readonly std?: Range;
}

const metrics: readonly Metric[] = [
  'promptLength',
  'outputLength',
  'sharedPrefixShare',
  'keyPortionShare',
  'requestsSharingKeyPortion',
];
const isShare = (metric: Metric) => metric === 'sharedPrefixShare' || metric === 'keyPortionShare';

/**
 * `options`: Table 1 describes each dataset's prompts, not a working set, so where a statistic needs
 * whole sessions (an agent chain's 48 steps, a document's 17 questions) the sample holds few sessions
 * open at once (the generators' earlier fixed defaults), so that they complete within the sample.
 */
const table1: Record<
  Exclude<WorkloadName, 'mixed' | DistServeWorkloadName | 'conversation'>,
  { requests: number; options?: Partial<AnyWorkloadOptions> } & Record<Metric, Row>
> = {
  toolbench: {
    requests: 1000,
    promptLength: { target: [1835, 742] },
    outputLength: { target: [43, 16] },
    sharedPrefixShare: { target: [0.85, 0.13] },
    keyPortionShare: { target: [0.76, 0.16] },
    // Under the authors' even popularity (200 tools for 2 instances) a tool is shared by about
    // requests/tools + 1 of the sample (6 at 1000 requests); Table 1's 39 +- 64 is the whole dataset's.
    // (Under the earlier Zipf-300 default it was ~58.)
    requestsSharingKeyPortion: { target: [39, 64], mean: [4, 8], std: [1, 4] },
  },
  'embodied-agent': {
    requests: 3000,
    options: { activeChains: 16 },
    promptLength: { target: [2285, 471] },
    outputLength: { target: [16, 13] },
    // Every step but a chain's last is a prefix of the next: ~100% shared with little spread. Table 1's
    // 14% spread needs ~3% of requests unshared, which chains of 48 +- 8 steps do not produce.
    sharedPrefixShare: { target: [0.97, 0.14], std: [0, 0.14] },
    keyPortionShare: { target: [0.76, 0.12] },
    requestsSharingKeyPortion: { target: [48, 8] },
  },
  programming: {
    requests: 3000,
    promptLength: { target: [3871, 1656] },
    // The authors cut outputs at 512 tokens, so the mean falls (~150) and the tail is gone.
    outputLength: { target: [190, 343], mean: [120, 209], std: [100, 686] },
    // The unshared tail is a per-sample instruction of similar length everywhere: small spread.
    sharedPrefixShare: { target: [0.97, 0.074], std: [0.01, 0.074] },
    // The authors' 2400-token demonstration is longer than most problems (1360 on average), so it is
    // most prompts' key portion (62% of a 3860-token prompt): the mean share falls below Table 1's.
    keyPortionShare: { target: [0.78, 0.13], mean: [0.65, 0.83] },
    // For the same reason most requests share their key portion with every request of the sample; with
    // the earlier 680-token demonstration it was samplesPerProblem (16) plus a few huge sets.
    requestsSharingKeyPortion: { target: [126, 2157], mean: [14, 3000], std: [0, 2157] },
  },
  'video-qa': {
    requests: 2000,
    promptLength: { target: [9865, 5976] },
    outputLength: { target: [4, 1.5] },
    sharedPrefixShare: { target: [0.88, 0.32] },
    // A question of ~50 tokens is 0.2-2% of the prompt, more spread than Table 1's 0.2%.
    keyPortionShare: { target: [0.99, 0.002], std: [0.001, 0.008] },
    // Questions in proportion to video length (as the authors did) spread like the lengths do.
    requestsSharingKeyPortion: { target: [8.6, 2], std: [2, 8] },
  },
  loogle: {
    requests: 1500,
    options: { activeDocuments: 16 },
    promptLength: { target: [23474, 6105] },
    outputLength: { target: [16, 9.9] },
    sharedPrefixShare: { target: [0.91, 0.24] },
    // The document is ~99.8% of every prompt; Table 1's lower 94% +- 15% is not modelled.
    keyPortionShare: { target: [0.94, 0.15], mean: [0.94, 1], std: [0, 0.15] },
    requestsSharingKeyPortion: { target: [18, 8.6] },
  },
};

function defaultMean(metric: Metric, target: number): Range {
  return isShare(metric) ? [target - 0.05, target + 0.05] : [target * 0.9, target * 1.1];
}

const format = (metric: Metric, { mean, std }: MeanStd) =>
  isShare(metric)
    ? `(${(mean * 100).toFixed(1)}%, ${(std * 100).toFixed(1)}%)`
    : `(${mean.toFixed(mean < 100 ? 1 : 0)}, ${std.toFixed(std < 100 ? 1 : 0)})`;

const printed: string[] = [];
const widths = [15, 26, 18, 18];
const line = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(' ');

describe('Table 1 statistics of the synthetic workloads', () => {
  after(() => {
    console.log(['', line(['workload', 'metric', 'measured', 'Table 1']), ...printed].join('\n'));
  });

  for (const [name, rows] of Object.entries(table1)) {
    it(`${name} (${rows.requests} requests, seed 1)`, () => {
      const stats: WorkloadStats = measureWorkload(
        createWorkload(name, { requests: rows.requests, rps: 10, seed: 1, ...rows.options }),
      );
      const failures: string[] = [];
      for (const metric of metrics) {
        const row = rows[metric];
        const measured = stats[metric];
        const [targetMean, targetStd] = row.target;
        const target = { mean: targetMean, std: targetStd };
        const cells = [name, metric, format(metric, measured), format(metric, target)];
        printed.push(line(cells));
        const [meanLow, meanHigh] = row.mean ?? defaultMean(metric, targetMean);
        const [stdLow, stdHigh] = row.std ?? [targetStd / 2, targetStd * 2];
        if (!(measured.mean >= meanLow && measured.mean <= meanHigh)) {
          failures.push(`${metric} mean ${measured.mean} outside [${meanLow}, ${meanHigh}]`);
        }
        if (!(measured.std >= stdLow && measured.std <= stdHigh)) {
          failures.push(`${metric} std ${measured.std} outside [${stdLow}, ${stdHigh}]`);
        }
      }
      const perKey = `${stats.keyPortions} key portions, ${format('requestsSharingKeyPortion', stats.requestsPerKeyPortion)} requests each`;
      printed.push(`${''.padEnd(15)} ${perKey}`);
      assert.deepEqual(failures, []);
    });
  }
});
