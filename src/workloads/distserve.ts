import type { Random } from '../core/random.ts';
import { type LengthDist, sampleLength } from './length-dist.ts';
import { type LengthPair, lengthWorkload } from './synthetic.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

/**
 * DistServe's three applications (Zhong et al., OSDI 2024, section 6.1 and Table 1) as length
 * distributions: no dataset is read, every prompt is fresh random tokens (no prefix sharing), and
 * arrivals are Poisson at `rps`, as DistServe generated them ("the datasets do not include
 * timestamps"). See docs/design.md, "Workloads of the disaggregation papers", for the sources.
 *
 * What is cited and what is assumed. DistServe's Figure 7 (input and output length distributions
 * of ShareGPT, HumanEval and LongBench) survives in our copy of the paper only as a caption, so its
 * numbers are not available to us. We use the statistics that the seed papers do give, the length
 * rules of DistServe's artifact (evaluation/2-benchmark-serving/0-prepare-dataset.py: OPT tokenizer,
 * OPT's 2048-position context), and mark every other number as assumed, with the reason.
 */

/** A DistServe SLO: time to first token and time per output token, in seconds. */
export interface ApplicationSlo {
  readonly model: string;
  readonly ttft: number;
  readonly tpot: number;
}

/** A statistic a generator is fitted to, and where it comes from. */
export interface CitedStatistic {
  readonly metric: 'input median' | 'input mean' | 'input p90' | 'output median' | 'output mean';
  readonly value: number;
  /** 'cited': a published number; 'assumed': ours, with the reason in `source`. */
  readonly basis: 'cited' | 'assumed';
  readonly source: string;
}

export interface DistServeApplication {
  readonly application: string;
  readonly dataset: string;
  /** DistServe's Table 1 SLOs for this application (90% of requests must meet both). */
  readonly slos: readonly ApplicationSlo[];
  readonly statistics: readonly CitedStatistic[];
  readonly summary: string;
  readonly lengths: (random: Random) => LengthPair;
}

const VIDUR = 'Vidur (Agrawal et al., MLSys 2024) Table 1, Chat-1M (<=4k) row';
const TETRIINFER = "TetriInfer (Hu et al., 2024) section 5: ShareGPT answers' median is 128 tokens";

/**
 * Chatbot / ShareGPT. Cited: ShareGPT's answer median, 128 tokens (TetriInfer). ShareGPT's prompt
 * statistics are not in our sources (DistServe section 3.1 says only that "user prompts typically
 * average over hundreds of tokens", citing ShareGPT), so we assume the prompts of the nearest
 * published chat workload: LMSys-Chat-1M capped at 4096 tokens in all (Vidur Table 1: prompt mean 686,
 * median 417, p90 1678). The answer mean is assumed from the same row's mean/median ratio
 * (197/139) times ShareGPT's median: 181. Both lengths are log-normal, and a pair with more than
 * 4096 tokens in all is drawn again (Vidur's cap, under which its row was measured; 3.4% of pairs);
 * the log-normals' parameters were fitted so that the kept pairs have the four statistics above.
 * The fit also gives a prompt p90 of about 1690, against the row's 1678 (not fitted).
 * DistServe's own OPT runs dropped pairs of 2048 tokens or more; `synthetic:` can express that.
 */
const SHAREGPT_INPUT: LengthDist = { kind: 'lognormal', mean: 903, sd: 1622, min: 1, max: 4095 };
const SHAREGPT_OUTPUT: LengthDist = { kind: 'lognormal', mean: 182, sd: 184, min: 1, max: 4095 };
const SHAREGPT_MAX_TOTAL = 4096;

/**
 * Code completion / HumanEval: 164 problems, each a function signature and docstring (DistServe
 * section 6.1); DistServe's artifact sends the prompt and takes the canonical solution's length as
 * the output, replaying the 164 problems 10 times over (identical prompts recur there; here every
 * prompt is fresh, as this workload shares nothing). HumanEval's token lengths are not in our
 * sources, so all four numbers are assumed: prompts of a signature plus a docstring with a few
 * examples, ~450 characters, at ~3 characters per token for OPT's byte-level BPE on indented Python,
 * give a mean of ~150 tokens; solutions are short function bodies, mean ~70 tokens. Log-normal,
 * clamped to [40, 600] and [5, 500] tokens.
 */
const HUMANEVAL_INPUT: LengthDist = { kind: 'lognormal', mean: 150, sd: 70, min: 40, max: 600 };
const HUMANEVAL_OUTPUT: LengthDist = { kind: 'lognormal', mean: 70, sd: 50, min: 5, max: 500 };

/**
 * Summarization / LongBench. Cited: DistServe's artifact truncates each LongBench context to
 * min(2040 - answer, U[1900, 2048]) tokens (its defaults --longbench-min-prompt-len 1900,
 * --longbench-max-prompt-len 2048), so prompt + answer never exceeds 2040 tokens and prompts
 * are at least 1900 tokens unless the answer is longer than 140. LongBench's answer lengths are not
 * in our sources: we assume summaries of a few paragraphs, log-normal with mean 200 and sd 200
 * (median ~141), clamped to [8, 1024] tokens.
 */
const LONGBENCH_OUTPUT: LengthDist = { kind: 'lognormal', mean: 200, sd: 200, min: 8, max: 1024 };
const LONGBENCH_CONTEXT = { min: 1900, max: 2048, total: 2040 };

export const distServeApplications = {
  'sharegpt-like': {
    application: 'chatbot',
    dataset: 'ShareGPT',
    slos: [
      { model: 'OPT-13B', ttft: 0.2, tpot: 0.1 },
      { model: 'OPT-66B', ttft: 0.4, tpot: 0.1 },
      { model: 'OPT-175B', ttft: 4.0, tpot: 0.2 },
    ],
    statistics: [
      {
        metric: 'input median',
        value: 417,
        basis: 'assumed',
        source: `${VIDUR} (no ShareGPT prompt statistic)`,
      },
      {
        metric: 'input mean',
        value: 686,
        basis: 'assumed',
        source: `${VIDUR} (no ShareGPT prompt statistic)`,
      },
      { metric: 'input p90', value: 1678, basis: 'assumed', source: `${VIDUR}; not fitted, a check` },
      { metric: 'output median', value: 128, basis: 'cited', source: TETRIINFER },
      { metric: 'output mean', value: 181, basis: 'assumed', source: `128 x ${VIDUR}'s mean/median 197/139` },
    ],
    summary:
      'DistServe chatbot (ShareGPT): prompts median 417 mean 686, answers median 128, <= 4096 in all; SLO TTFT 0.2-4 s, TPOT 0.1-0.2 s',
    lengths: (random) => {
      for (;;) {
        const input = sampleLength(random, SHAREGPT_INPUT);
        const output = sampleLength(random, SHAREGPT_OUTPUT);
        if (input + output <= SHAREGPT_MAX_TOTAL) return { input, output };
      }
    },
  },
  'humaneval-like': {
    application: 'code completion',
    dataset: 'HumanEval',
    slos: [{ model: 'OPT-66B', ttft: 0.125, tpot: 0.2 }],
    statistics: [
      {
        metric: 'input mean',
        value: 150,
        basis: 'assumed',
        source: 'signature + docstring, ~450 chars at ~3 chars/token',
      },
      { metric: 'output mean', value: 70, basis: 'assumed', source: 'a short function body' },
    ],
    summary:
      'DistServe code completion (HumanEval): short prompts (mean 150) and answers (mean 70), lengths assumed; SLO TTFT 0.125 s, TPOT 0.2 s',
    lengths: (random) => ({
      input: sampleLength(random, HUMANEVAL_INPUT),
      output: sampleLength(random, HUMANEVAL_OUTPUT),
    }),
  },
  'longbench-like': {
    application: 'summarization',
    dataset: 'LongBench',
    slos: [{ model: 'OPT-66B', ttft: 15, tpot: 0.15 }],
    statistics: [
      { metric: 'output mean', value: 200, basis: 'assumed', source: 'summaries of a few paragraphs' },
    ],
    summary:
      "DistServe summarization (LongBench): prompts min(2040 - answer, U[1900,2048]) as DistServe's artifact cut them, answers mean 200 (assumed); SLO TTFT 15 s, TPOT 0.15 s",
    lengths: (random) => {
      const output = sampleLength(random, LONGBENCH_OUTPUT);
      const cut = random.int(LONGBENCH_CONTEXT.min, LONGBENCH_CONTEXT.max);
      return { input: Math.min(LONGBENCH_CONTEXT.total - output, cut), output };
    },
  },
} as const satisfies Record<string, DistServeApplication>;

export type DistServeWorkloadName = keyof typeof distServeApplications;

/** The named application's request stream (its name is the requests' `workload`). */
export function distServeWorkload(
  name: DistServeWorkloadName,
  options: WorkloadOptions,
): Iterable<WorkloadRequest> {
  return lengthWorkload(name, options, distServeApplications[name].lengths);
}
