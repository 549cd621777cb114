/**
 * Fits the linear part (a + b * tokens) of the llama2-7b-h100 cost-model preset from vidur's H100 profile
 * of Llama-2-7B, and derives the attention part (c, d) from a roofline, because vidur's attention.csv is
 * Git LFS and not available.
 *
 *   npx tsx scripts/fit-vidur.ts [path/to/mlp.csv] [--tp 1] [--layers 32]
 *
 * Per row: sum of the mean times (ms) of the per-layer non-attention ops, times the layer count, as vidur's
 * ExecutionTime.model_time does (the embedding runs once and vidur leaves it out; so do we).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  attentionFlopsPerPair,
  fitLine,
  GPU_SHAPES,
  kvBytesPerToken,
  type LineFit,
  MODEL_SHAPES,
  ROOFLINE_DEFAULTS,
} from '../src/core/cost-model/index.ts';

export const DEFAULT_VIDUR_CSV = fileURLToPath(
  new URL('../../shared/data/vidur-profiling/h100/meta-llama/Llama-2-7b-hf/mlp.csv', import.meta.url),
);
const PER_LAYER_OPS = [
  'input_layernorm',
  'attn_pre_proj',
  'attn_rope',
  'attn_post_proj',
  'post_attention_layernorm',
  'mlp_up_proj',
  'mlp_act',
  'mlp_down_proj',
  'add',
];

function readRows(path: string): Record<string, string>[] {
  const [header, ...lines] = readFileSync(path, 'utf8').trim().split(/\r?\n/);
  const columns = header!.split(',');
  return lines.map((line) => {
    const cells = line.split(',');
    return Object.fromEntries(columns.map((column, i) => [column, cells[i] ?? '']));
  });
}

export interface VidurFit {
  /** Least-squares line over the compute-bound rows (num_tokens >= COMPUTE_BOUND_FROM), ms. */
  readonly fit: LineFit;
  /** Mean time of the memory-bound rows (num_tokens <= MEMORY_BOUND_UP_TO), ms: the hinge's floor. */
  readonly floorMs: number;
  /** Worst relative error of max(floor, line) over every row. */
  readonly hingeMaxRelError: number;
  readonly tokens: number[];
  /** Per row: layers x summed mean op times, ms. */
  readonly ms: number[];
}

/** Rows from here up are compute-bound: time grows linearly with tokens. */
export const COMPUTE_BOUND_FROM = 512;
/** Rows up to here are memory-bound: time is flat (every weight is read once per iteration). */
export const MEMORY_BOUND_UP_TO = 64;

/**
 * A hinge through the non-attention time of the rows at one tensor-parallel degree: a floor for
 * small batches and a least-squares line for large ones. A single line over all rows would put
 * decode steps a third below the measured floor.
 */
export function fitVidurMlp(path: string, tp = 1, layers = 32): VidurFit {
  const rows = readRows(path).filter((row) => row['num_tensor_parallel_workers'] === String(tp));
  if (rows.length < 2)
    throw new Error(`fewer than two rows with num_tensor_parallel_workers=${tp} in ${path}`);
  const tokens = rows.map((row) => Number(row['num_tokens']));
  const ms = rows.map(
    (row) => layers * PER_LAYER_OPS.reduce((sum, op) => sum + Number(row[`time_stats.${op}.mean`]), 0),
  );
  const large = tokens.map((t, i) => [t, ms[i]!] as const).filter(([t]) => t >= COMPUTE_BOUND_FROM);
  const small = ms.filter((_, i) => tokens[i]! <= MEMORY_BOUND_UP_TO);
  const fit = fitLine(
    large.map(([t]) => t),
    large.map(([, m]) => m),
  );
  const floorMs = small.reduce((sum, m) => sum + m, 0) / small.length;
  const hinge = (t: number) => Math.max(floorMs, fit.intercept + fit.slope * t);
  const hingeMaxRelError = tokens.reduce(
    (worst, t, i) => Math.max(worst, Math.abs(hinge(t) - ms[i]!) / ms[i]!),
    0,
  );
  return { fit, floorMs, hingeMaxRelError, tokens, ms };
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { tp: { type: 'string', default: '1' }, layers: { type: 'string', default: '32' } },
  });
  const path = positionals[0] ?? DEFAULT_VIDUR_CSV;
  const layers = Number(values.layers);
  const { fit, floorMs, hingeMaxRelError, tokens, ms } = fitVidurMlp(path, Number(values.tp), layers);

  const model = MODEL_SHAPES['llama2-7b'];
  const gpu = GPU_SHAPES['h100-80g'];
  const c = kvBytesPerToken(model) / (gpu.bandwidth * ROOFLINE_DEFAULTS.bandwidthEfficiency);
  const d = attentionFlopsPerPair(model) / (gpu.peakFlops * ROOFLINE_DEFAULTS.prefillMfu);

  const out = process.stdout;
  out.write(`source: ${path}\n`);
  out.write(`rows: ${tokens.length} (num_tensor_parallel_workers=${values.tp}, num_tokens `);
  out.write(`${Math.min(...tokens)}..${Math.max(...tokens)}), ${layers} layers\n`);
  out.write(`floor (ms, mean of rows with num_tokens <= ${MEMORY_BOUND_UP_TO}): ${floorMs}\n`);
  out.write(
    `line (ms, rows with num_tokens >= ${COMPUTE_BOUND_FROM}): ${fit.intercept} + ${fit.slope} * tokens\n`,
  );
  out.write(
    `hinge max(floor, line) over all rows: max relative error ${(100 * hingeMaxRelError).toFixed(1)}%\n`,
  );
  out.write(`line R^2 ${fit.rSquared.toFixed(5)}, max |error| ${fit.maxAbsError.toFixed(3)} ms\n`);
  const worst = (error: (i: number) => number) =>
    tokens.reduce((best, _, i) => (error(i) > error(best) ? i : best), 0);
  const residual = (i: number) =>
    Math.abs(ms[i]! - Math.max(floorMs, fit.intercept + fit.slope * tokens[i]!));
  const absWorst = worst(residual);
  const relWorst = worst((i) => residual(i) / ms[i]!);
  out.write(`worst absolute at ${tokens[absWorst]} tokens (measured ${ms[absWorst]!.toFixed(3)} ms), `);
  out.write(`worst relative at ${tokens[relWorst]} tokens (measured ${ms[relWorst]!.toFixed(3)} ms)\n`);
  out.write('roofline (s): c = KV bytes per token / (bandwidth * efficiency), ');
  out.write('d = 4 * layers * hidden / (peak * prefill MFU)\n');
  out.write(
    `coefficients (s): { a: ${fit.intercept * 1e-3}, b: ${fit.slope * 1e-3}, c: ${c}, d: ${d}, floor: ${floorMs * 1e-3} }\n`,
  );
}

// Run only when invoked as a script, so tests can import fitVidurMlp.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main();
