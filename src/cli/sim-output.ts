import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SimRecord } from '../sim/record.ts';
import type { SimReport } from '../sim/run.ts';
import { writePlot } from './plot-files.ts';

const CSV_COLUMNS = [
  'id',
  'workload',
  'instance',
  'branch',
  'arrival',
  'dispatch',
  'start',
  'firstToken',
  'finish',
  'promptTokens',
  'predictedCachedTokens',
  'cachedTokens',
  'outputTokens',
] as const;

/** The journey of a disaggregated request; these columns come last, in runs where some request was. */
const JOURNEY_COLUMNS = [
  'decodeInstance',
  'prefillEnd',
  'transferStart',
  'transferEnd',
  'decodeStart',
] as const;

/** `--out DIR`: results.json, one per-request CSV per run, and latency/TTFT-against-RPS plots. */
export async function writeSimOutputs(
  dir: string,
  reports: readonly SimReport[],
  records: ReadonlyMap<string, readonly SimRecord[]>,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'results.json'), `${JSON.stringify({ results: reports }, null, 2)}\n`);
  for (const [key, rows] of records) {
    const columns: readonly (keyof SimRecord)[] = rows.some((r) => r.decodeInstance >= 0)
      ? [...CSV_COLUMNS, ...JOURNEY_COLUMNS]
      : CSV_COLUMNS;
    const lines = [columns.join(',')];
    for (const r of rows) lines.push(columns.map((c) => String(r[c])).join(','));
    await writeFile(join(dir, `requests-${key.replace(/[^a-z0-9.@-]/gi, '_')}.csv`), `${lines.join('\n')}\n`);
  }
  const policies = [...new Set(reports.map((r) => r.policy))];
  const byRate = (pick: (r: SimReport) => number) =>
    policies.map((p) => ({
      name: p,
      points: reports
        .filter((r) => r.policy === p)
        .map((r) => [r.rps, pick(r)] as [number, number])
        .sort((a, b) => a[0] - b[0]),
    }));
  const workload = reports[0]?.workload ?? '';
  await writePlot(dir, {
    file: 'latency',
    title: `${workload}: mean latency`,
    xLabel: 'requests per second',
    yLabel: 'mean latency (s)',
    series: byRate((r) => r.latency.mean),
  });
  await writePlot(dir, {
    file: 'ttft',
    title: `${workload}: mean TTFT`,
    xLabel: 'requests per second',
    yLabel: 'mean TTFT (s)',
    series: byRate((r) => r.ttft.mean),
  });
}
