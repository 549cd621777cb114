import { fixed, textTable } from '../report/text-table.ts';
import type { SimReport } from '../sim/run.ts';

/** One row per policy and rate: the figures a person compares first. */
export function simTable(reports: readonly SimReport[]): string {
  const head = reports[0];
  // With --slo-ttft/--slo-tpot: the share of requests meeting both.
  const slo = reports.some((r) => r.sloAttainment !== undefined);
  // With disaggregated requests: the KV transfer's p99 (the stages are in --json).
  const transfer = reports.some((r) => r.transfer !== undefined);
  const title =
    head === undefined ? '' : `${head.workload}, ${head.instances} instances, ${head.requests} requests\n\n`;
  return (
    title +
    textTable(
      [
        'policy',
        'rps',
        'lat mean s',
        'lat p99 s',
        'ttft mean s',
        'ttft p99 s',
        'tpot mean s',
        ...(transfer ? ['xfer p99 s'] : []),
        'hit rate',
        'busy max/min',
        ...(slo ? ['slo met'] : []),
      ],
      reports.map((r) => {
        const busy = r.perInstance.map((i) => i.busyFraction);
        const min = Math.min(...busy);
        return [
          r.policy,
          fixed(r.rps, 3),
          fixed(r.latency.mean, 3),
          fixed(r.latency.p99, 3),
          fixed(r.ttft.mean, 3),
          fixed(r.ttft.p99, 3),
          fixed(r.tpot.mean, 4),
          ...(transfer ? [r.transfer === undefined ? '-' : fixed(r.transfer.p99, 4)] : []),
          fixed(r.cacheHitRate, 3),
          min > 0 ? fixed(Math.max(...busy) / min, 2) : 'inf',
          ...(slo ? [fixed(r.sloAttainment?.both ?? 0, 3)] : []),
        ];
      }),
    ) +
    refusedNote(reports)
  );
}

/** Requests refused (too large for every instance the policy would pick) or routed again, said under the table. */
function refusedNote(reports: readonly SimReport[]): string {
  return (
    countNote(
      reports,
      'refused',
      'refused, their prompt and output larger than the KV of every instance or of every one the policy would pick (left out of every figure above)',
    ) +
    countNote(reports, 'rerouted', 'served by a larger instance after one too small for them refused them')
  );
}

/** One count of the runs, said under the table ('' when every run has none). */
function countNote(reports: readonly SimReport[], field: 'refused' | 'rerouted', what: string): string {
  const some = reports.filter((r) => (r[field] ?? 0) > 0);
  if (some.length === 0) return '';
  const counts = new Set(reports.map((r) => r[field] ?? 0));
  const which =
    counts.size === 1
      ? `${some[0]![field]} of ${some[0]!.requests} requests in every run`
      : some.map((r) => `${r.policy} @ ${fixed(r.rps, 3)}: ${r[field]} of ${r.requests}`).join(', ');
  return `\n\n${what}: ${which}`;
}
