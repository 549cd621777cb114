/**
 * Why a DistServe placement search gives a model parallelism, read off the cost model and the
 * workload's own requests without simulation: how long a prompt alone takes to prefill at each TP,
 * how much of that the all-reduces are, the longest prompt whose prefill alone meets the TTFT target,
 * and the share of the workload's requests within it: the most that can meet the TTFT target at
 * any rate. A phase's goodput at a 90% target is 0 where that share is under 90%, whatever the queue.
 * Also the KV memory of each TP against the batch size (decode).
 */
import { modelShape } from '../core/cost-model/catalog.ts';
import { parallelCostModel } from '../core/cost-model/parallel.ts';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { ROOFLINE_DEFAULTS } from '../core/cost-model/roofline-defaults.ts';
import type { CostModel } from '../core/cost-model/types.ts';
import { fixed } from '../report/text-table.ts';
import { breakEvenSpeedup, perGpuRateWithin, rateWithin } from '../search/intra-op.ts';
import type { PlanResult } from '../search/plan.ts';
import type { Configuration } from '../search/space.ts';
import { workloadStream } from '../workloads/request-stream.ts';

/** The prefill MFU of vidur's H100 Llama-2-7B profile (docs/cost-model.md): a stated fit, not our default. */
export const VIDUR_FIT_PREFILL_MFU = 0.583;
/** OPT's context (2,048 positions): DistServe's artifact dropped pairs this long or longer. */
export const OPT_CONTEXT = 2048;

export interface PhaseCeiling {
  readonly tp: number;
  /** Seconds to prefill 512, 1,024 and 2,048 tokens alone. */
  readonly prefill: readonly [number, number, number];
  /** Share of the 1,024-token prefill that is all-reduce. */
  readonly allReduceShare: number;
  /** The longest prompt whose prefill alone meets the TTFT target. */
  readonly longest: number;
  /** Shares of the requests within it: all; only pairs shorter than OPT's context; at the vidur-fit MFU. */
  readonly within: number;
  readonly withinOptContext: number;
  readonly withinFitMfu: number;
  /** Both: pairs shorter than OPT's context, at the vidur-fit MFU. */
  readonly withinBoth: number;
  /** KV capacity in tokens, and how many requests of the workload's mean length (prompt + answer) it holds. */
  readonly kvTokens: number;
  readonly meanRequestsHeld: number;
  /** Seconds of a decode step of `batch` requests at the mean context. */
  readonly decodeStep: number;
}

/** The longest prompt (up to 16,384 tokens) whose prefill alone takes at most `seconds`; 0 if none. */
export function longestWithin(costModel: CostModel, seconds: number): number {
  let lo = 0;
  let hi = 16_384;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (costModel.prefillTime(mid, 0) <= seconds) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Per TP (one pipeline stage) on `gpu`: the zero-load ceilings of `workload`'s first `requests` requests. */
export function phaseCeilings(options: {
  readonly model: string;
  readonly gpu: string;
  readonly tensorParallel: readonly number[];
  readonly workload: string;
  readonly requests: number;
  readonly seed: number;
  readonly ttft: number;
  readonly batch: number;
}): PhaseCeiling[] {
  const pairs = [
    ...workloadStream(options.workload, { requests: options.requests, seed: options.seed })(),
  ].map((r) => ({ input: r.tokens.length, total: r.tokens.length + r.outputTokens }));
  const share = (keep: (p: (typeof pairs)[number]) => boolean, longest: number) => {
    const kept = pairs.filter(keep);
    return kept.filter((p) => p.input <= longest).length / Math.max(1, kept.length);
  };
  const meanTotal = pairs.reduce((s, p) => s + p.total, 0) / Math.max(1, pairs.length);
  const model = modelShape(options.model);
  return options.tensorParallel.map((tp) => {
    const preset = costModelPreset(`roofline:${options.model}@${options.gpu}${tp === 1 ? '' : `x${tp}`}`);
    const gpu = preset.instance.gpu;
    const freeLink = parallelCostModel({
      model,
      gpu,
      tp,
      interconnectBandwidth: 1e30,
      commLatencySeconds: 0,
    });
    const fit = parallelCostModel({ model, gpu, tp, prefillMfu: VIDUR_FIT_PREFILL_MFU });
    const longest = longestWithin(preset, options.ttft);
    const longestFit = longestWithin(fit, options.ttft);
    const context = Math.round(meanTotal);
    return {
      tp,
      prefill: [preset.prefillTime(512, 0), preset.prefillTime(1024, 0), preset.prefillTime(2048, 0)],
      allReduceShare: 1 - freeLink.prefillTime(1024, 0) / preset.prefillTime(1024, 0),
      longest,
      within: share(() => true, longest),
      withinOptContext: share((p) => p.total < OPT_CONTEXT, longest),
      withinFitMfu: share(() => true, longestFit),
      withinBoth: share((p) => p.total < OPT_CONTEXT, longestFit),
      kvTokens: preset.kvCapacityTokens,
      meanRequestsHeld: Math.floor(preset.kvCapacityTokens / meanTotal),
      decodeStep: preset.iterationTime({
        requests: options.batch,
        newTokens: options.batch,
        seqTokens: options.batch * context,
        newTimesSeq: options.batch * context,
      }),
    };
  });
}

/** One of OPT-13B's TP-only searches: a workload, SLOs scaled by `scale`, both questions. */
export interface Variant {
  readonly workload: string;
  readonly scale: number;
  readonly slo: { readonly ttft: number; readonly tpot: number };
  readonly placed: PlanResult;
  readonly vllmPlusPlus: PlanResult;
}

/**
 * DistServe's own model (Eq. 1 and Eq. 3, average TTFT of an M/D/1 prefill queue) for a 512-token
 * prompt: the per-GPU rates of TP 1 and of TP 2 and 4 at the roofline's speed-ups, and the speed-up
 * each would need to match TP 1.
 */
function eqThreeLines(
  tp1: PhaseCeiling | undefined,
  tp2: PhaseCeiling | undefined,
  tp4: PhaseCeiling | undefined,
  ttft: number,
  scales: readonly number[],
): string[] {
  if (tp1 === undefined || tp2 === undefined || tp4 === undefined) return [];
  const d = tp1.prefill[0];
  const k2 = d / tp2.prefill[0];
  const k4 = d / tp4.prefill[0];
  const targets = [...new Set(scales)].map((scale) => ttft * scale);
  const tp1Wins = targets
    .filter((t) => rateWithin(d, t) > Math.max(perGpuRateWithin(d, t, 2, k2), perGpuRateWithin(d, t, 4, k4)))
    .map((t) => fixed(t, 3));
  const even = (target: number, gpus: number) => {
    const k = breakEvenSpeedup(d, target, gpus);
    return k === undefined ? `none (> ${gpus})` : fixed(k, 2);
  };
  return [
    '',
    `**How large a speed-up TP needs (DistServe's Eq. 1 and 3).** By the paper's own model of a prefill`,
    `instance (one FCFS queue, Poisson arrivals, a fixed execution time: the average TTFT, not our 90% share),`,
    `with D = ${ms(d)} ms (the roofline's 512-token prefill at TP 1), the highest rate whose average TTFT meets the`,
    `target, per GPU, at TP 1 and at the roofline's speed-ups (K = ${fixed(k2, 2)} on 2 GPUs, ${fixed(k4, 2)} on 4), and the K`,
    'at which TP 2 or TP 4 would only match TP 1:',
    '',
    '| TTFT target (s) | TP 1 (req/s per GPU) | TP 2 at the roofline K | K for TP 2 to match | TP 4 at the roofline K | K for TP 4 to match |',
    '|---|---|---|---|---|---|',
    ...targets.map((t) => {
      return `| ${fixed(t, 3)} | ${fixed(rateWithin(d, t), 2)} | ${fixed(perGpuRateWithin(d, t, 2, k2), 2)} | ${even(t, 2)} | ${fixed(perGpuRateWithin(d, t, 4, k4), 2)} | ${even(t, 4)} |`;
    }),
    '',
    `By this model TP 1 is best per GPU at ${tp1Wins.length === 0 ? 'none of these targets' : `TTFT ${tp1Wins.join(', ')} s`}; a speed-up below the matching K`,
    'widens that. Our runs count the 90% share, a tail in which the queueing weighs more than in the average,',
    'which favours the faster instance (the Figure 1 rows above); the roofline has no term for the efficiency',
    'real kernels lose on small per-GPU shapes, and we have no measured K for OPT-13B on A100s.',
  ];
}

/** Per-GPU goodputs of a plan's items of one phase (or all, for a colocated plan), by TP x PP label. */
export function perGpuBy(
  plan: PlanResult,
  phase?: 'prefill' | 'decode',
): { readonly tp: number; readonly pp: number; readonly goodput: number; readonly perGpu: number }[] {
  return plan.evaluated
    .filter((e) => phase === undefined || (e.configuration as { phase?: string }).phase === phase)
    .map((e) => {
      const c = e.configuration as Configuration;
      return {
        tp: c.tensorParallel,
        pp: c.pipelineParallel,
        goodput: e.capacity,
        perGpu: e.objectives.perGpu,
      };
    });
}

const pct = (x: number) => `${fixed(100 * x, 1)}%`;
const ms = (s: number) => fixed(1000 * s, 1);

/**
 * The report's section on OPT-13B: what the paper's finding is about (vLLM++), the zero-load ceilings
 * of each TP, the decode memory, and the same searches on Figure 1's workload.
 */
export function whyLines(input: {
  readonly requests: number;
  readonly seed: number;
  readonly slo: { readonly ttft: number; readonly tpot: number };
  readonly vllmPlusPlus: PlanResult;
  readonly placed: PlanResult;
  readonly variants: readonly Variant[];
  readonly ceilings: readonly {
    readonly model: string;
    readonly ttft: number;
    readonly rows: readonly PhaseCeiling[];
  }[];
}): string[] {
  const { slo } = input;
  const lines = [
    '## Why OPT-13B gets parallelism here',
    '',
    '**What the paper\'s finding is about.** §6.4 (Figure 11, simulated) reports that "vLLM++", vLLM with its',
    'parallelism enumerated, performs the same as vLLM "because we find the default non-parallelism setting has',
    'the best per-GPU goodput": a finding about colocated serving. The paper prints no DistServe placement for',
    'OPT-13B; it credits DistServe-High\'s gain to "tailored parallelism strategies for prefill and decoding',
    'instances". So `opt-13b-no-parallelism` searches vLLM++: one colocated OPT-13B instance per TP x PP',
    `(round-robin, FCFS, batch 128, chunks of 512), capacity at 90% meeting both TTFT ${slo.ttft} s and TPOT ${slo.tpot} s,`,
    'ranked per GPU (`preble plan` with `--layout 1M --objective perGpu`):',
    '',
    '| TP x PP | goodput (req/s) | per GPU |',
    '|---|---|---|',
    ...perGpuBy(input.vllmPlusPlus).map(
      (r) => `| ${r.tp} x ${r.pp} | ${fixed(r.goodput, 2)} | ${fixed(r.perGpu, 3)} |`,
    ),
    '',
    '**The zero-load ceiling.** A goodput at a 90% target needs 90% of the requests to meet the TTFT target,',
    'and no request can beat its prefill alone. The table reads, for each TP (one pipeline stage; PP does not',
    "shorten a request's prefill), the roofline's prefill of a prompt alone, the all-reduces' share of it, the",
    "longest prompt it prefills within the TTFT target, and the share of the workload's requests within it",
    `(the first ${input.requests} sharegpt-like requests of seed ${input.seed}); then the same share counting only the pairs`,
    `shorter than OPT's ${OPT_CONTEXT}-token context (DistServe's artifact drops the rest), at a prefill MFU of`,
    `${VIDUR_FIT_PREFILL_MFU} (vidur's H100 fit, docs/cost-model.md; our default is ${ROOFLINE_DEFAULTS.prefillMfu}), and with both.`,
    '',
    '| model (TTFT) | TP | prefill 512 / 1,024 / 2,048 tokens (ms) | all-reduce share (1,024) | longest prompt within TTFT | requests within | < 2,048 tokens | MFU 0.583 | both |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const c of input.ceilings)
    for (const r of c.rows)
      lines.push(
        `| ${c.model} (${c.ttft} s) | ${r.tp} | ${r.prefill.map(ms).join(' / ')} | ${pct(r.allReduceShare)} | ${r.longest} | ${pct(r.within)} | ${pct(r.withinOptContext)} | ${pct(r.withinFitMfu)} | ${pct(r.withinBoth)} |`,
      );
  const small = input.ceilings.find((c) => c.model === 'opt-13b')?.rows ?? [];
  const tp1 = small.find((r) => r.tp === 1);
  const tp2 = small.find((r) => r.tp === 2);
  const tp4 = small.find((r) => r.tp === 4);
  const prefillTp2 = perGpuBy(input.placed, 'prefill').find((r) => r.tp === 2 && r.pp === 1);
  const decodeTp1 = perGpuBy(input.placed, 'decode').find((r) => r.tp === 1 && r.pp === 1);
  const decodeTp2 = perGpuBy(input.placed, 'decode').find((r) => r.tp === 2 && r.pp === 1);
  if (tp1 !== undefined && tp2 !== undefined && tp4 !== undefined)
    lines.push(
      '',
      `At TP 1 the roofline prefills at most ${tp1.longest} tokens of OPT-13B within ${slo.ttft} s, and ${pct(tp1.within)} of the`,
      `requests have prompts that short: ${tp1.within < 0.9 ? 'under' : 'over'} 90%, so TP 1's goodput is ${tp1.within < 0.9 ? '0 at any rate, as a prefill instance and colocated alike' : 'bounded by queueing, not by the ceiling'}.`,
      `OPT's context cap alone gives ${pct(tp1.withinOptContext)}, the higher MFU alone ${pct(tp1.withinFitMfu)}, both ${pct(tp1.withinBoth)}.`,
      `TP 2's ceiling, ${pct(tp2.within)}, leaves little room for queueing (prefill goodput ${fixed(prefillTp2?.goodput ?? 0, 2)} req/s); TP 4's`,
      `is ${pct(tp4.within)}. The all-reduces are ${pct(tp4.allReduceShare)} of a 1,024-token prefill at TP 4 (${pct(tp2.allReduceShare)} at TP 2); twice`,
      `as costly, they would cut TP 4's longest prompt within the target to about ${fixed(tp4.longest / (1 + tp4.allReduceShare), 0)} tokens, still far above`,
      `TP 1's ${tp1.longest}: the all-reduce cost does not decide the choice, the ceiling does.`,
      '',
      `**Decode.** TP 1's KV memory holds ${tp1.kvTokens} tokens, ${tp1.meanRequestsHeld} requests of the workload's mean length, under`,
      `the batch of 128; TP 2 holds ${tp2.kvTokens} (${tp2.meanRequestsHeld}) and TP 4 ${tp4.kvTokens} (${tp4.meanRequestsHeld}). A decode step of`,
      `128 at the mean context takes ${ms(tp1.decodeStep)} / ${ms(tp2.decodeStep)} / ${ms(tp4.decodeStep)} ms at TP 1 / 2 / 4, against TPOT ${slo.tpot} s. So a TP 1 decode`,
      `instance runs at most the batch its memory holds, TP 2 the whole batch on twice the GPUs: ${fixed(decodeTp1?.perGpu ?? 0, 2)}`,
      `against ${fixed(decodeTp2?.perGpu ?? 0, 2)} req/s per GPU.`,
    );
  const bestTp = (rows: readonly { tp: number; perGpu: number }[]) =>
    rows.reduce((a, b) => (b.perGpu > a.perGpu ? b : a), { tp: 0, perGpu: 0 }).tp;
  lines.push(
    '',
    '**Other SLOs and lengths.** The same two questions for OPT-13B at TP 1, 2 and 4 (one stage): the SLOs',
    'scaled by 2 and 4 (DistServe\'s "SLO Scale"), and DistServe\'s Figure 1 workload (512 tokens in, 64 out),',
    'whose prompts TP 1 prefills well within the TTFT target. Per-GPU goodput (req/s), best in bold:',
    '',
    '| workload | TTFT / TPOT (s) | TP | prefill | decode | vLLM++ (colocated) |',
    '|---|---|---|---|---|---|',
  );
  const bests = input.variants.map((v) => ({
    v,
    tp1: {
      prefill: perGpuBy(v.placed, 'prefill').find((r) => r.tp === 1)?.perGpu ?? 0,
      decode: perGpuBy(v.placed, 'decode').find((r) => r.tp === 1)?.perGpu ?? 0,
      colocated: perGpuBy(v.vllmPlusPlus).find((r) => r.tp === 1)?.perGpu ?? 0,
    },
    best: {
      prefill: bestTp(perGpuBy(v.placed, 'prefill')),
      decode: bestTp(perGpuBy(v.placed, 'decode')),
      colocated: bestTp(perGpuBy(v.vllmPlusPlus)),
    },
  }));
  for (const { v, best } of bests) {
    const prefill = perGpuBy(v.placed, 'prefill');
    const decode = perGpuBy(v.placed, 'decode');
    const colocated = perGpuBy(v.vllmPlusPlus);
    const cell = (rows: typeof prefill, tp: number, bestOf: number) => {
      const x = fixed(rows.find((r) => r.tp === tp)?.perGpu ?? 0, 3);
      return tp === bestOf ? `**${x}**` : x;
    };
    for (const p of prefill)
      lines.push(
        `| \`${v.workload}\` | ${v.slo.ttft} / ${v.slo.tpot} | ${p.tp} | ${cell(prefill, p.tp, best.prefill)} | ${cell(decode, p.tp, best.decode)} | ${cell(colocated, p.tp, best.colocated)} |`,
      );
  }
  const everywhere = (phase: 'prefill' | 'colocated') => bests.every((b) => b.best[phase] > 1);
  const fig1 = bests.find((b) => b.v.workload.startsWith('synthetic:'));
  lines.push(
    '',
    `Best TP per GPU (prefill / decode / colocated): ${bests.map((b) => `${b.v.workload} x${b.v.scale}: ${b.best.prefill} / ${b.best.decode} / ${b.best.colocated}`).join('; ')}.`,
    tp1 === undefined || tp2 === undefined || tp4 === undefined
      ? ''
      : `The roofline's speed-up of a 512-token prefill is ${fixed(tp1.prefill[0] / tp2.prefill[0], 2)} on 2 GPUs (the paper's K, 1 < K < 2) and ${fixed(tp1.prefill[0] / tp4.prefill[0], 2)} on 4.`,
    'With a speed-up near the GPU count, one TP instance shortens every service time and, as one queue of',
    'faster service, cuts the waiting more than replicas splitting the rate do (M/G/1: the wait grows with',
    "the service time's second moment, which TP divides by the speed-up squared). Here TP beats TP 1 per GPU",
    `in prefill ${everywhere('prefill') ? 'at every' : 'at some'} SLO scale and length, colocated ${everywhere('colocated') ? 'at every one' : 'at some'}${everywhere('prefill') ? ': once the ceiling is out of the way, that scaling keeps TP 1 from winning' : ''}. Decode, not`,
    'TTFT-bound, goes to the fewest GPUs whose KV memory holds the batch.',
    ...eqThreeLines(
      tp1,
      tp2,
      tp4,
      slo.ttft,
      bests.map((b) => b.v.scale),
    ),
    ...(fig1 === undefined
      ? []
      : [
          `DistServe's Figure 1 (P90 curves, a 13B model on one A100) reads, at TP 1, 5.6 req/s prefill-only, 10`,
          `decode-only and 1.6 colocated per GPU; on its workload we measure ${fixed(fig1.tp1.prefill, 2)}, ${fixed(fig1.tp1.decode, 2)} and ${fixed(fig1.tp1.colocated, 2)}`,
          `(${fixed(fig1.tp1.prefill / 5.6, 2)}x, ${fixed(fig1.tp1.decode / 10, 2)}x and ${fixed(fig1.tp1.colocated / 1.6, 2)}x the paper's). The roofline's decode steps are shorter than`,
          'published ones (docs/cost-model.md,',
          'Splitwise Table IV).',
        ]),
  );
  return lines;
}
