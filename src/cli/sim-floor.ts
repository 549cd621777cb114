import { specFloor } from '../experiments/latency-floor.ts';
import type { Percentiles } from '../report/stats.ts';
import { fixed, textTable } from '../report/text-table.ts';
import { runChunkTokens, type SimReport, type SimSpec } from '../sim/run.ts';

/** A run's latency floor (`--floor`): what no policy's mean or p99 goes below at that rate. */
export interface FloorRow {
  readonly policy: string;
  readonly rps: number;
  readonly floor: { readonly mean: number; readonly p99: number };
  /** The run's mean latency over the floor's: how far from contention-free it ran. */
  readonly meanOverFloor: number;
}

/**
 * One row per run, its floor from the run's own spec (stream, model, chunk budget, warm-up). Policies at
 * one rate share a stream, so the floor is computed once per rate and chunk budget, not once per run.
 */
export function floorRows(reports: readonly SimReport[], specOf: (report: SimReport) => SimSpec): FloorRow[] {
  const byStream = new Map<string, Percentiles>();
  return reports.map((report) => {
    const spec = specOf(report);
    const key = `${report.rps}:${runChunkTokens(spec)}`;
    let floor = byStream.get(key);
    if (floor === undefined) {
      floor = specFloor(spec).latency;
      byStream.set(key, floor);
    }
    const { mean, p99 } = floor;
    return {
      policy: report.policy,
      rps: report.rps,
      floor: { mean, p99 },
      meanOverFloor: report.latency.mean / mean,
    };
  });
}

export function floorTable(rows: readonly FloorRow[]): string {
  return [
    'Latency floor: each measured request alone on an idle instance, every earlier prompt already cached.',
    "No policy's mean or p99 goes below it (up to a fraction of a percent: the fitted costs' steps), so round",
    "robin's mean over any policy's is at most round robin's mean over the floor:",
    '',
    textTable(
      ['policy', 'rps', 'floor mean s', 'floor p99 s', 'lat mean / floor'],
      rows.map((r) => [
        r.policy,
        String(r.rps),
        fixed(r.floor.mean, 3),
        fixed(r.floor.p99, 3),
        `${fixed(r.meanOverFloor, 2)}x`,
      ]),
    ),
  ].join('\n');
}
