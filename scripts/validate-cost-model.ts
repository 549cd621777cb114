/**
 * The roofline cost model (with tensor and pipeline parallelism, parallel.ts) against the published
 * figures we have: vidur's per-operator profiles, Preble's fitted models, and the seeds' tables
 * (Splitwise Table IV, DistServe, Aladdin). Prints Markdown: predicted, published, error.
 *
 *   npx tsx scripts/validate-cost-model.ts [--vidur ../shared/data/vidur-profiling]
 *
 * Nothing here is fitted: every prediction uses ROOFLINE_DEFAULTS and PARALLEL_DEFAULTS as they are.
 * The vidur section is skipped when the profiles are absent.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  costModelPreset,
  GPU_SHAPES,
  type GpuName,
  kvBytesPerToken,
  LLAMA3_70B_H100_COEFFICIENTS,
  layerMatrixParams,
  MODEL_SHAPES,
  type ModelName,
  type ParallelOptions,
  parallelCostModel,
  prefillSaturationTokens,
  ROOFLINE_DEFAULTS,
} from '../src/core/cost-model/index.ts';
import { fitVidurMlp } from './fit-vidur.ts';

const DEFAULT_VIDUR_DIR = fileURLToPath(new URL('../../shared/data/vidur-profiling', import.meta.url));

/** Vidur's profiles we have, by model and GPU (vidur's "a100" is the 80 GB SXM of its Azure VMs). */
export const VIDUR_PROFILES: readonly { path: string; model: ModelName; gpu: GpuName }[] = [
  { path: 'h100/meta-llama/Llama-2-7b-hf/mlp.csv', model: 'llama2-7b', gpu: 'h100-80g' },
  { path: 'h100/meta-llama/Llama-2-70b-hf/mlp.csv', model: 'llama2-70b', gpu: 'h100-80g' },
  { path: 'a100/meta-llama/Meta-Llama-3-8B/mlp.csv', model: 'llama3-8b', gpu: 'a100-80g' },
  { path: 'a100/meta-llama/Meta-Llama-3-70B/mlp.csv', model: 'llama3-70b', gpu: 'a100-80g' },
];

const TP_DEGREES = [1, 2, 4, 8];

/**
 * The roofline's non-attention time of one iteration over `tokens` tokens on one of `tp` GPUs, ms:
 * the layers' matrices (what vidur times) through the two roofline arms at the default prefill MFU
 * and bandwidth efficiency. No all-reduce: vidur profiles communication separately.
 */
export function rooflineLinearMs(
  model: ModelName,
  gpu: GpuName,
  tp: number,
  tokens: number,
  prefillMfu: number = ROOFLINE_DEFAULTS.prefillMfu,
): number {
  const shape = MODEL_SHAPES[model];
  const g = GPU_SHAPES[gpu];
  const params = shape.layers * layerMatrixParams(shape);
  const compute = (2 * params * tokens) / (tp * g.peakFlops * prefillMfu);
  const memory = (params * shape.bytesPerParam) / (tp * g.bandwidth * ROOFLINE_DEFAULTS.bandwidthEfficiency);
  return 1e3 * Math.max(compute, memory);
}

const pct = (predicted: number, published: number) =>
  `${predicted >= published ? '+' : ''}${((100 * (predicted - published)) / published).toFixed(0)}%`;
const ms = (seconds: number) => (seconds * 1e3).toFixed(1);

function table(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string[] {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ];
}

/** Mean |relative error| of the roofline over a profile's rows in a token range, and the worst. */
interface RangeError {
  readonly mean: number;
  readonly worst: number;
  readonly rows: number;
}

function rangeError(errors: readonly number[]): RangeError {
  const abs = errors.map(Math.abs);
  return {
    mean: abs.reduce((s, e) => s + e, 0) / Math.max(1, abs.length),
    worst: Math.max(0, ...abs),
    rows: abs.length,
  };
}

function vidurSection(dir: string): string[] {
  const lines = ['## vidur per-operator profiles (non-attention work of every layer, per GPU)', ''];
  if (!existsSync(dir)) return [...lines, `Skipped: ${dir} is absent.`, ''];
  lines.push(
    "Measured: layers x the summed mean times of vidur's per-layer ops (norms, QKV/O projections, rope, MLP,",
    'add) at each tensor-parallel degree (each GPU runs its shard; communication is not in these files).',
    "Predicted: the roofline's two arms for the layers' matrices at the defaults (MFU 0.45, 70% of HBM",
    'bandwidth). Error = predicted / measured - 1 (negative: the roofline is faster). Memory-bound rows are',
    'num_tokens <= 64, compute-bound >= 512. "BW share" is the HBM bandwidth the measured memory-bound rows',
    'reach (the weights read once at their mean time) and "MFU" the FLOP rate of the largest row, both of',
    'the datasheet peak: the mechanism behind the errors.',
    '',
  );
  const summary: (string | number)[][] = [];
  const detail: (string | number)[][] = [];
  for (const profile of VIDUR_PROFILES) {
    const shape = MODEL_SHAPES[profile.model];
    const gpu = GPU_SHAPES[profile.gpu];
    const params = shape.layers * layerMatrixParams(shape);
    for (const tp of TP_DEGREES) {
      const { tokens, ms: measured } = fitVidurMlp(join(dir, profile.path), tp, shape.layers);
      const errors = tokens.map(
        (n, i) => rooflineLinearMs(profile.model, profile.gpu, tp, n) / measured[i]! - 1,
      );
      const memoryBound = rangeError(errors.filter((_, i) => tokens[i]! <= 64));
      const computeBound = rangeError(errors.filter((_, i) => tokens[i]! >= 512));
      const smallMs = measured.filter((_, i) => tokens[i]! <= 64);
      const meanSmall = smallMs.reduce((s, m) => s + m, 0) / smallMs.length;
      const bwShare = (params * shape.bytesPerParam) / tp / (meanSmall * 1e-3) / gpu.bandwidth;
      const largest = tokens.reduce((best, n, i) => (n > tokens[best]! ? i : best), 0);
      const mfu = (2 * params * tokens[largest]!) / tp / (measured[largest]! * 1e-3) / gpu.peakFlops;
      summary.push([
        `${profile.model} @ ${profile.gpu}`,
        tp,
        tokens.length,
        `${(100 * memoryBound.mean).toFixed(0)}% (worst ${(100 * memoryBound.worst).toFixed(0)}%)`,
        `${(100 * computeBound.mean).toFixed(0)}% (worst ${(100 * computeBound.worst).toFixed(0)}%)`,
        `${(100 * bwShare).toFixed(0)}%`,
        `${(100 * mfu).toFixed(0)}% at ${tokens[largest]}`,
      ]);
      if (tp === 1 || tp === 4) {
        for (const n of [1, 64, 256, 1024, 4096]) {
          const i = tokens.indexOf(n);
          if (i < 0) continue;
          const predicted = rooflineLinearMs(profile.model, profile.gpu, tp, n);
          detail.push([
            `${profile.model} @ ${profile.gpu}`,
            tp,
            n,
            measured[i]!.toFixed(2),
            predicted.toFixed(2),
            pct(predicted, measured[i]!),
          ]);
        }
      }
    }
  }
  lines.push(
    ...table(
      [
        'profile',
        'TP',
        'rows',
        'mean abs error, <= 64 tokens',
        'mean abs error, >= 512 tokens',
        'BW share',
        'MFU',
      ],
      summary,
    ),
    '',
    'Selected rows (ms per iteration, all layers, one GPU):',
    '',
    ...table(['profile', 'TP', 'tokens', 'measured', 'roofline', 'error'], detail),
    '',
  );
  return lines;
}

/** Preble's Llama-3-70B H100 fit (TP 2, SGLang), ms, for a request alone: a + b ext + c seq + d ext seq. */
function prebleLlama70Ms(tokens: number): number {
  const { a, b, c, d } = LLAMA3_70B_H100_COEFFICIENTS;
  return 1e3 * (a + b * tokens + c * tokens + d * tokens * tokens);
}

function prebleSection(): string[] {
  const lines = ["## Preble's fitted models", ''];
  lines.push(
    "Mistral-7B on one A6000: Preble's SGLang fits (the `mistral-7b-a6000` preset) against",
    '`roofline:mistral-7b@a6000`. Llama-3-70B on 2 H100 (TP 2): the authors prefill fit (the',
    '`llama3-70b-h100` coefficients, measured at TP 2) against `roofline:llama3-70b@h100x2` with its',
    'all-reduces, at memory fraction 0.9 (the weights, 141 GB, do not fit 2 x 80 GiB at 0.8). Error =',
    'roofline / fit - 1.',
    '',
  );
  const rows: (string | number)[][] = [];
  const mistralFit = costModelPreset('mistral-7b-a6000');
  const mistralRoof = costModelPreset('roofline:mistral-7b@a6000');
  for (const n of [128, 512, 1024, 2048, 4096]) {
    const fit = mistralFit.prefillTime(n, 0);
    const roof = mistralRoof.prefillTime(n, 0);
    rows.push(['mistral-7b @ a6000', `prefill ${n}`, ms(fit), ms(roof), pct(roof, fit)]);
  }
  for (const batch of [1, 16, 64]) {
    const context = 1000;
    const shape = {
      requests: batch,
      newTokens: batch,
      seqTokens: batch * context,
      newTimesSeq: batch * context,
    };
    const fit = mistralFit.iterationTime(shape);
    const roof = mistralRoof.iterationTime(shape);
    rows.push([
      'mistral-7b @ a6000',
      `decode step, ${batch} x ${context} context`,
      ms(fit),
      ms(roof),
      pct(roof, fit),
    ]);
  }
  const llamaRoof = costModelPreset('roofline:llama3-70b@h100x2', { memoryFraction: 0.9 });
  for (const n of [128, 512, 1024, 2048, 4096, 8192]) {
    const fit = prebleLlama70Ms(n) / 1e3;
    const roof = llamaRoof.prefillTime(n, 0);
    rows.push(['llama3-70b @ h100 x2', `prefill ${n}`, ms(fit), ms(roof), pct(roof, fit)]);
  }
  lines.push(...table(['model', 'work', 'fit (ms)', 'roofline (ms)', 'error'], rows), '');
  return lines;
}

interface SeedRow {
  readonly source: string;
  readonly what: string;
  readonly published: number;
  readonly predicted: number;
  /** The prediction without the tensor-parallel all-reduces, where there are some. */
  readonly withoutComm?: number;
  readonly unit: string;
}

/** The same configuration with a free link: what the all-reduces and sends add. */
function commFree(options: ParallelOptions) {
  return parallelCostModel({
    ...options,
    interconnectBandwidth: Number.POSITIVE_INFINITY,
    commLatencySeconds: 0,
  });
}

export function seedRows(prefillMfu: number = ROOFLINE_DEFAULTS.prefillMfu): SeedRow[] {
  const rows: SeedRow[] = [];
  // Splitwise Table IV: Llama-2-70B on a DGX (8 GPUs, TP 8, NVLink), vLLM, P50 unbatched.
  const splitwise: [GpuName, string, number, number, number, number][] = [
    // gpu, trace, median prompt, median output, TTFT ms, TBT ms
    ['a100-80g', 'coding', 1500, 13, 185, 52],
    ['h100-80g', 'coding', 1500, 13, 95, 31],
    ['a100-80g', 'conversation', 1020, 129, 155, 40],
    ['h100-80g', 'conversation', 1020, 129, 84, 28],
  ];
  for (const [gpu, trace, prompt, output, ttft, tbt] of splitwise) {
    const options: ParallelOptions = {
      model: MODEL_SHAPES['llama2-70b'],
      gpu: GPU_SHAPES[gpu],
      tp: 8,
      prefillMfu,
    };
    const model = parallelCostModel(options);
    const free = commFree(options);
    const context = prompt + Math.floor(output / 2);
    rows.push({
      source: 'Splitwise Table IV',
      what: `Llama-2-70B, ${gpu} x8, ${trace}: TTFT of ${prompt} tokens`,
      published: ttft,
      predicted: 1e3 * model.prefillTime(prompt, 0),
      withoutComm: 1e3 * free.prefillTime(prompt, 0),
      unit: 'ms',
    });
    rows.push({
      source: 'Splitwise Table IV',
      what: `Llama-2-70B, ${gpu} x8, ${trace}: TBT alone at ${context} context`,
      published: tbt,
      predicted: 1e3 * model.decodeTime(1, context - 1),
      withoutComm: 1e3 * free.decodeTime(1, context - 1),
      unit: 'ms',
    });
  }
  // Aladdin §6.1: the prefill SLO is the approximate latency of a 4096-token prompt on each testbed (A100
  // over PCIe, V100 over NVLink), with the GPUs per worker the paper finds best on ShareGPT.
  const aladdin: [ModelName, GpuName, number, number, number | undefined][] = [
    // model, gpu, tp, prefill SLO ms, link override (A100 testbed: PCIe)
    ['llama2-70b', 'a100-80g', 2, 1600, 32e9],
    ['llama2-13b', 'a100-80g', 1, 600, 32e9],
    ['llama2-7b', 'a100-80g', 1, 400, 32e9],
    ['llama2-13b', 'v100', 2, 800, undefined],
    ['llama2-7b', 'v100', 1, 800, undefined],
  ];
  for (const [model, gpu, tp, slo, link] of aladdin) {
    const options: ParallelOptions = {
      model: MODEL_SHAPES[model],
      gpu: GPU_SHAPES[gpu],
      tp,
      memoryFraction: 0.9,
      prefillMfu,
      ...(link === undefined ? {} : { interconnectBandwidth: link }),
    };
    rows.push({
      source: 'Aladdin Table 2 (prefill SLO ~ latency at 4096)',
      what: `${model}, ${gpu} x${tp}${link === undefined ? '' : ' (PCIe)'}: prefill of 4096 tokens`,
      published: slo,
      predicted: 1e3 * parallelCostModel(options).prefillTime(4096, 0),
      ...(tp > 1 ? { withoutComm: 1e3 * commFree(options).prefillTime(4096, 0) } : {}),
      unit: 'ms',
    });
  }
  // DistServe §3.3: a 512-token OPT-66B request holds about 1.13 GB of KV.
  rows.push({
    source: 'DistServe §3.3',
    what: 'OPT-66B: KV of a 512-token request (GiB)',
    published: 1.13,
    predicted: (kvBytesPerToken(MODEL_SHAPES['opt-66b']) * 512) / 2 ** 30,
    unit: 'GiB',
  });
  // DistServe §3.1 (Fig. 4: OPT-66B, 2 A100, 512-token inputs): 2-way intra-op parallelism speeds a prefill
  // up by 1 < K < 2 (communication), 2-way inter-op leaves a request's latency about D (D_s ~ 2 D_m).
  const opt66: ParallelOptions = {
    model: MODEL_SHAPES['opt-66b'],
    gpu: GPU_SHAPES['a100-80g'],
    kvCapacityTokens: 4096,
  };
  const alone = parallelCostModel(opt66).prefillTime(512, 0);
  rows.push({
    source: 'DistServe §3.1 (range)',
    what: 'OPT-66B, 512 tokens on A100: speedup K of TP 2 (published 1 < K < 2)',
    published: 1.5,
    predicted: alone / parallelCostModel({ ...opt66, tp: 2 }).prefillTime(512, 0),
    unit: 'range',
  });
  rows.push({
    source: 'DistServe §3.1 (approx.)',
    what: 'OPT-66B, 512 tokens on A100: latency of PP 2 over one GPU (published D_s ~ D)',
    published: 1,
    predicted: parallelCostModel({ ...opt66, pp: 2 }).prefillTime(512, 0) / alone,
    unit: 'ratio',
  });
  // DistServe §3.1: 512 tokens saturate an A100 for a 13B model (L_m).
  rows.push({
    source: 'DistServe §3.1 (L_m)',
    what: 'OPT-13B on one A100: prompt tokens that saturate the GPU',
    published: 512,
    predicted: prefillSaturationTokens(costModelPreset('roofline:opt-13b@a100')),
    unit: 'tokens',
  });
  return rows;
}

function seedSection(): string[] {
  const lines = ["## The seeds' tables", ''];
  lines.push(
    'Splitwise Table IV: P50 of unbatched requests, Llama-2-70B in vLLM on a DGX-A100 / DGX-H100 (8 GPUs, TP 8);',
    "predicted: the median prompt's prefill alone, and one decode step alone at the median prompt plus half",
    'the median output. Aladdin: its Table 2 prefill SLOs, which §6.1 sets to the approximate latency of a',
    '4096-token prompt on each testbed (4 A100 80 GB over PCIe; 4 V100 32 GB over NVLink), at the GPUs per',
    'worker the paper finds best for ShareGPT (70B: 2, 13B: 1 on A100, 2 on V100, 7B: 1); memory fraction 0.9.',
    '"no comm": the same model with a free link, to show what the all-reduces add.',
    '',
  );
  const digits: Record<string, number> = { ms: 1, GiB: 3, tokens: 0, range: 2, ratio: 2 };
  const rows = seedRows().map((r) => [
    r.source,
    r.what,
    r.unit === 'range' ? '1 < K < 2' : r.published,
    r.predicted.toFixed(digits[r.unit] ?? 2),
    r.withoutComm === undefined ? '' : r.withoutComm.toFixed(1),
    r.unit === 'range'
      ? r.predicted > 1 && r.predicted < 2
        ? 'within'
        : 'outside'
      : pct(r.predicted, r.published),
  ]);
  lines.push(...table(['source', 'what', 'published', 'predicted', 'no comm', 'error'], rows), '');
  return lines;
}

/** The fit's dataset: vidur's H100 Llama-2-7B profile at TP 1. */
const FIT_PROFILE = VIDUR_PROFILES[0]!;

/**
 * A stated fit, not a default: the prefill MFU that vidur's H100 Llama-2-7B profile at TP 1 shows in its
 * compute-bound rows (>= 512 tokens): the mean of 2 x matrix params x tokens / time / peak.
 */
export function fittedPrefillMfu(dir: string): number {
  const shape = MODEL_SHAPES[FIT_PROFILE.model];
  const params = shape.layers * layerMatrixParams(shape);
  const { tokens, ms } = fitVidurMlp(join(dir, FIT_PROFILE.path), 1, shape.layers);
  const mfus = tokens
    .map((n, i) => (2 * params * n) / (ms[i]! * 1e-3) / GPU_SHAPES[FIT_PROFILE.gpu].peakFlops)
    .filter((_, i) => tokens[i]! >= 512);
  return mfus.reduce((sum, m) => sum + m, 0) / mfus.length;
}

/** Prefill-type checks at a prefill MFU: [what, published ms, predicted ms]. */
function prefillChecks(dir: string, prefillMfu: number): [string, number, number][] {
  const checks: [string, number, number][] = [];
  for (const profile of VIDUR_PROFILES.slice(2)) {
    const shape = MODEL_SHAPES[profile.model];
    for (const tp of TP_DEGREES) {
      const { tokens, ms } = fitVidurMlp(join(dir, profile.path), tp, shape.layers);
      for (const n of [1024, 4096, 16_384]) {
        const i = tokens.indexOf(n);
        if (i >= 0)
          checks.push([
            `vidur ${profile.model} @ a100 TP${tp}, ${n} tokens`,
            ms[i]!,
            rooflineLinearMs(profile.model, profile.gpu, tp, n, prefillMfu),
          ]);
      }
    }
  }
  const mistral = costModelPreset('mistral-7b-a6000');
  const mistralRoof = parallelCostModel({
    model: MODEL_SHAPES['mistral-7b'],
    gpu: GPU_SHAPES.a6000,
    prefillMfu,
  });
  const llama = parallelCostModel({
    model: MODEL_SHAPES['llama3-70b'],
    gpu: GPU_SHAPES['h100-80g'],
    tp: 2,
    memoryFraction: 0.9,
    prefillMfu,
  });
  for (const n of [512, 2048, 4096]) {
    checks.push([
      `Preble mistral-7b @ a6000, prefill ${n}`,
      1e3 * mistral.prefillTime(n, 0),
      1e3 * mistralRoof.prefillTime(n, 0),
    ]);
    checks.push([
      `Preble llama3-70b @ h100 x2, prefill ${n}`,
      prebleLlama70Ms(n),
      1e3 * llama.prefillTime(n, 0),
    ]);
  }
  for (const row of seedRows(prefillMfu).filter(
    (r) => r.what.includes('TTFT') || r.what.includes('prefill'),
  )) {
    checks.push([`${row.source}: ${row.what}`, row.published, row.predicted]);
  }
  return checks;
}

function fitSection(dir: string): string[] {
  const lines = ['## A stated fit, checked on other data (not the default)', ''];
  if (!existsSync(dir)) return [...lines, `Skipped: ${dir} is absent.`, ''];
  const mfu = fittedPrefillMfu(dir);
  const base = prefillChecks(dir, ROOFLINE_DEFAULTS.prefillMfu);
  const fitted = prefillChecks(dir, mfu);
  lines.push(
    `The prefill MFU of vidur's H100 Llama-2-7B profile at TP 1 (rows >= 512 tokens): ${mfu.toFixed(3)}, against`,
    `the default ${ROOFLINE_DEFAULTS.prefillMfu}. The same prefill checks at both, on data the fit did not see (vidur's A100`,
    "profiles, Preble's fits, the seeds' prefill figures); error = predicted / published - 1:",
    '',
  );
  const rows = base.map(([what, published, predicted], i) => [
    what,
    published.toFixed(1),
    `${predicted.toFixed(1)} (${pct(predicted, published)})`,
    `${fitted[i]![2].toFixed(1)} (${pct(fitted[i]![2], published)})`,
  ]);
  const meanAbs = (checks: [string, number, number][]) =>
    (100 * checks.reduce((sum, [, p, q]) => sum + Math.abs(q / p - 1), 0)) / checks.length;
  rows.push(['**mean abs error**', '', `${meanAbs(base).toFixed(0)}%`, `${meanAbs(fitted).toFixed(0)}%`]);
  lines.push(
    ...table(
      ['check', 'published (ms)', `MFU ${ROOFLINE_DEFAULTS.prefillMfu}`, `MFU ${mfu.toFixed(3)} (fit)`],
      rows,
    ),
    '',
  );
  return lines;
}

function main(): void {
  const { values } = parseArgs({ options: { vidur: { type: 'string', default: DEFAULT_VIDUR_DIR } } });
  const lines = [
    '# Cost model against published figures',
    '',
    'Generated by `npx tsx scripts/validate-cost-model.ts > docs/results/calibration/cost-model-validation.md`',
    "(vidur's profiles from `../shared/data/vidur-profiling`, `--vidur DIR` for another place). Defaults:",
    'prefill MFU 0.45, decode MFU 0.3, 70% of HBM bandwidth, 0.5 ms per iteration; all-reduce 10 us + bytes',
    'over 70% of the link. Nothing is fitted to these tables. What the errors mean, by mechanism:',
    '[docs/cost-model.md](../../cost-model.md#validation).',
    '',
    ...vidurSection(values.vidur!),
    ...prebleSection(),
    ...seedSection(),
    ...fitSection(values.vidur!),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

// Run only when invoked as a script, so tests can import the helpers.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main();
