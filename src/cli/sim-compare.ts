import {
  comparePaired,
  EVEN,
  type PairedComparison,
  steadyLatency,
} from '../experiments/paired-comparison.ts';
import { fixed, textTable } from '../report/text-table.ts';
import type { SimRecord } from '../sim/record.ts';
import type { SimReport } from '../sim/run.ts';

/** `--baseline`: one policy against another at one rate, on the same request stream. */
export interface BaselineComparison extends PairedComparison {
  readonly baseline: string;
  readonly policy: string;
  readonly rps: number;
}

/**
 * The baseline against every other policy of the run, rate by rate: paired latency ratios over the
 * requests both completed after the warm-up, with their bootstrap intervals (`comparePaired`).
 */
export function compareWithBaseline(
  baseline: string,
  reports: readonly SimReport[],
  records: ReadonlyMap<string, readonly SimRecord[]>,
  warmupSeconds: number,
): BaselineComparison[] {
  const steady = (policy: string, rps: number) =>
    steadyLatency(records.get(`${policy}@${rps}`) ?? [], warmupSeconds);
  const out: BaselineComparison[] = [];
  for (const rps of [...new Set(reports.map((r) => r.rps))]) {
    const mine = steady(baseline, rps);
    const others = new Set(
      reports.filter((r) => r.rps === rps && r.policy !== baseline).map((r) => r.policy),
    );
    for (const policy of others) {
      const paired = comparePaired(mine, steady(policy, rps));
      if (paired !== undefined) out.push({ baseline, policy, rps, ...paired });
    }
  }
  return out;
}

/** The comparison as a text table, with a line that says how to read it. */
export function baselineTable(comparisons: readonly BaselineComparison[]): string {
  if (comparisons.length === 0) return '';
  const baseline = comparisons[0]!.baseline;
  const interval = (lo: number, hi: number) => `${lo.toFixed(3)}-${hi.toFixed(3)}`;
  const standing = (c: BaselineComparison) => {
    const parts = (['mean', 'p99'] as const)
      .filter((s) => c[s].standing !== 'even')
      .map((s) => `${c[s].standing} on ${s}${c[s].firm ? ' (firm)' : ''}`);
    return parts.length === 0 ? 'even' : parts.join(', ');
  };
  const rows = comparisons.map((c) => [
    c.policy,
    c.rps,
    fixed(c.mean.ratio, 3),
    interval(c.mean.lo, c.mean.hi),
    fixed(c.p50, 3),
    fixed(c.p90, 3),
    fixed(c.p95, 3),
    fixed(c.p99.ratio, 3),
    interval(c.p99.lo, c.p99.hi),
    c.n,
    standing(c),
  ]);
  return [
    `${baseline} against each policy: its latency over ${baseline}'s on the requests both completed (above 1: ${baseline} faster), ` +
      `95% paired-bootstrap interval over requests; even within ${EVEN * 100}%, firm when the interval clears that band`,
    '',
    textTable(
      ['policy', 'rps', 'mean', 'mean 95%', 'p50', 'p90', 'p95', 'p99', 'p99 95%', 'pairs', baseline],
      rows,
    ),
  ].join('\n');
}
