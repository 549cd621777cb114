/**
 * Won / even / lost of e2-plus against each anchor from a policies grid's results.json, counted as the
 * report counts them (docs/e2.md, measurement log step 13). With a second results.json from an
 * e2-plus-only run (`preble experiment policies --only e2-plus --out DIR`), its e2-plus series
 * replaces the first's: the anchors do not depend on e2-plus, so a variant is scored without
 * re-running them (the same seed gives the same rates and streams). A grid run on several seeds
 * (`--repeats`) is counted seed by seed, from each run's own figures (the report pools them instead).
 *
 *   node --import tsx scripts/e2-plus-grid-compare.ts docs/results/policies/results.json [DIR/results.json]
 */
import { readFileSync } from 'node:fs';
import { EVEN } from '../src/experiments/policies.ts';

interface Row {
  readonly panel: string;
  readonly series: string;
  readonly rps: number;
  /** Its seed, in a grid run on several (absent: one seed). */
  readonly seed?: number;
  readonly latency: { readonly mean: number; readonly p99: number };
}

const [basePath, variantPath] = process.argv.slice(2);
if (basePath === undefined) throw new Error('usage: e2-plus-grid-compare.ts BASE.json [VARIANT.json]');
const read = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Row[];
/** A cell: panel, rate and (in a grid run on several seeds) seed. */
const keyOf = (r: Row) => `${r.panel} @ ${r.rps}${r.seed === undefined ? '' : ` seed ${r.seed}`}`;
const cells = new Map<string, Map<string, Row>>();
for (const r of read(basePath)) {
  const key = keyOf(r);
  if (!cells.has(key)) cells.set(key, new Map());
  cells.get(key)!.set(r.series, r);
}
const base = new Map([...cells].map(([k, s]) => [k, s.get('e2-plus')!]));
if (variantPath !== undefined)
  for (const r of read(variantPath)) {
    if (r.series !== 'e2-plus') continue;
    const key = keyOf(r);
    const cell = cells.get(key);
    // A variant run at other rates or seeds than the base would be scored as the base's e2-plus.
    if (cell === undefined)
      throw new Error(`variant cell '${key}' is not in ${basePath} (same --seed and --repeats?)`);
    cell.set('e2-plus', r);
  }

const count = { won: 0, even: 0, lost: 0, lostOnMean: 0 };
const losses: string[] = [];
for (const [key, series] of cells) {
  const me = series.get('e2-plus')!;
  for (const [name, a] of series) {
    if (name === 'e2-plus') continue;
    const mean = a.latency.mean / me.latency.mean;
    const p99 = a.latency.p99 / me.latency.p99;
    // As the report: lost when behind on either, won when ahead on either and lost on neither.
    if (Math.min(mean, p99) < 1 - EVEN) {
      count.lost++;
      if (mean < 1 - EVEN) count.lostOnMean++;
      losses.push(`  ${key} vs ${name}: mean ${mean.toFixed(3)} p99 ${p99.toFixed(3)}`);
    } else if (Math.max(mean, p99) > 1 + EVEN) count.won++;
    else count.even++;
  }
}
console.log(`won ${count.won} even ${count.even} lost ${count.lost} (on mean ${count.lostOnMean})`);
for (const l of losses) console.log(l);
if (variantPath !== undefined) {
  const ratios = [...cells].map(([k, s]) => ({
    key: k,
    mean: s.get('e2-plus')!.latency.mean / base.get(k)!.latency.mean,
    p99: s.get('e2-plus')!.latency.p99 / base.get(k)!.latency.p99,
  }));
  const geo = (xs: number[]) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
  console.log(
    `variant / base, geometric mean over cells: mean ${geo(ratios.map((r) => r.mean)).toFixed(3)} p99 ${geo(ratios.map((r) => r.p99)).toFixed(3)}`,
  );
  for (const r of ratios.sort((a, b) => b.mean - a.mean).slice(0, 3))
    console.log(`  worst mean: ${r.key}: ${r.mean.toFixed(3)}`);
}
