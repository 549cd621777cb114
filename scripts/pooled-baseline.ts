/**
 * `preble sim --baseline` over several runs pooled (docs/e2.md, measurement log step 27): the
 * per-request CSVs that `preble sim --out DIR` wrote for the same cells on different traces (or
 * seeds), each request paired with itself under the other policy, ids prefixed by run, then the mean
 * and p99 ratios of each other policy over the baseline with their paired-bootstrap intervals
 * (`comparePaired`, as `--baseline` prints them for one run). One line per rate found in every DIR.
 *
 *   node --import tsx scripts/pooled-baseline.ts BASELINE DIR [DIR...]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  comparePaired,
  type RatioInterval,
  type SteadyLatency,
} from '../src/experiments/paired-comparison.ts';

const [baseline, ...dirs] = process.argv.slice(2);
if (baseline === undefined || dirs.length === 0) {
  console.error('usage: node --import tsx scripts/pooled-baseline.ts BASELINE DIR [DIR...]');
  process.exit(2);
}

/** The completed requests of one run's CSV: id (prefixed by run) and latency (finish - arrival). */
function readRun(file: string, run: number): { ids: string[]; latency: number[] } {
  const [header, ...rows] = readFileSync(file, 'utf8').trim().split('\n');
  const columns = header!.split(',');
  const id = columns.indexOf('id');
  const arrival = columns.indexOf('arrival');
  const finish = columns.indexOf('finish');
  const ids: string[] = [];
  const latency: number[] = [];
  for (const row of rows) {
    const cells = row.split(',');
    const end = Number(cells[finish]);
    if (!(end >= 0)) continue;
    ids.push(`${run}:${cells[id]}`);
    latency.push(end - Number(cells[arrival]));
  }
  return { ids, latency };
}

/** `requests-POLICY@RATE.csv` files of a directory, as [policy, rate] pairs. */
function seriesOf(dir: string): [string, string][] {
  return readdirSync(dir)
    .map((f) => /^requests-(.+)@(.+)\.csv$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [m[1]!, m[2]!]);
}

function pooled(policy: string, rate: string): SteadyLatency {
  const ids: string[] = [];
  const latency: number[] = [];
  dirs.forEach((dir, run) => {
    const r = readRun(join(dir, `requests-${policy}@${rate}.csv`), run);
    ids.push(...r.ids);
    latency.push(...r.latency);
  });
  return { ids, latency: Float64Array.from(latency) };
}

const inAll = (pairs: [string, string][][]) =>
  pairs[0]!.filter(([p, r]) => pairs.every((s) => s.some(([q, t]) => q === p && t === r)));
const series = inAll(dirs.map(seriesOf));
const rates = [...new Set(series.map(([, r]) => r))].sort((a, b) => Number(a) - Number(b));
const show = (x: RatioInterval) =>
  `${x.ratio.toFixed(3)} (${x.lo.toFixed(3)}-${x.hi.toFixed(3)})${x.firm ? ` firm ${x.standing}` : ''}`;
for (const rate of rates) {
  const base = pooled(baseline, rate);
  const others = series.filter(([p, r]) => r === rate && p !== baseline).map(([p]) => p);
  const parts = others.map((p) => {
    const c = comparePaired(base, pooled(p, rate));
    return c === undefined ? `${p}: no common requests` : `${p}: mean ${show(c.mean)}, p99 ${show(c.p99)}`;
  });
  console.log(`@ ${rate} (${base.ids.length} requests of ${baseline}): ${parts.join('; ')}`);
}
