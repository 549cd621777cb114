import type { Random } from '../core/random.ts';
import type { Tokens } from '../core/types.ts';
import { logNormalLength } from './lengths.ts';
import { interleaveSessions } from './sessions.ts';
import { checkPositiveInteger, defineWorkload, type RequestDraft, scaleInstances } from './stream.ts';
import { concatTokens, randomTokens } from './tokens.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

/** How a problem's samples arrive. */
export type ProgrammingOrder = 'shuffled' | 'bursts';

export interface ProgrammingOptions extends WorkloadOptions {
  /** Parallel samples (candidate programs) per problem. Default 16. */
  readonly samplesPerProblem?: number;
  /**
   * 'shuffled' (default), the authors' timing: they `random.shuffle` the whole request list
   * (`benchmark_workload_gen.py:1672`, `multi_exp_utils.py:299`), so a problem's samples are spread
   * over the run; here each arrival is a sample of one of `problems` open problems chosen uniformly.
   * 'bursts': one problem open at a time, its samples consecutive arrivals (parallel sampling, n > 1).
   */
  readonly order?: ProgrammingOrder;
  /**
   * Problems open at once under 'shuffled' (the working set). Default `PROBLEMS_PER_INSTANCE` x
   * instances. Ignored under 'bursts' (one at a time).
   */
  readonly problems?: number;
  /** Demonstration tokens shared by every request. Default 2400, the authors'; 680 was ours before. */
  readonly demonstrationTokens?: number;
  /** The client's max_tokens: outputs are cut there. Default 512, the authors'; 8192 was ours before. */
  readonly maxOutputTokens?: number;
}

/**
 * The authors' APPS configs: 160 problems per 2 GPUs, scaled with the GPU count
 * (`[160, 2812, 4.5]`, `[160, 3437, 5.5]` through `scale_to_gpu`). Per instance: 80 open problems.
 */
export const PROBLEMS_PER_INSTANCE = 80;
/** The authors' shared demonstration: 2400 tokens (synthetic, `benchmark_workload_gen.py` L1554-1673). */
export const AUTHORS_DEMONSTRATION_TOKENS = 2400;
/** The authors cap every output at 512 tokens (`max_tokens_override=512`). */
export const AUTHORS_MAX_OUTPUT_TOKENS = 512;

/**
 * Lengths fitted to Table 1 (prompt 3871 +- 1656, output 190 +- 343, 97% shared, 78% key portion).
 * The demonstration is shared by all requests; the problem description by its samples; a short
 * per-sample instruction keeps each prompt unique, as Table 1's 97% (not 100%) shared implies. The
 * problem's mean is what is left of the prompt mean (3860, within 1% of Table 1's 3871) after the
 * demonstration and the instruction: 1360 with the authors' 2400-token demonstration (3080 with
 * 680). A problem shorter than the demonstration makes the demonstration its key portion, shared by
 * every request: the source of Table 1's huge spread in requests per key portion.
 */
const PROMPT_MEAN_TOKENS = 3860;
const PROBLEM_TOKENS = { std: 1650, min: 40, max: 16000 };
const SAMPLE_INSTRUCTION_TOKENS = { mean: 100, std: 60, min: 4 };
/** Heavy-tailed generated code (Table 1's 190 +- 343), cut at the client's max_tokens. */
const OUTPUT_TOKENS = { mean: 190, std: 343, min: 1 };

/** APPS-like program generation: demonstration + problem + several parallel samples per problem. */
export function programming(options: ProgrammingOptions): Iterable<WorkloadRequest> {
  const samples = options.samplesPerProblem ?? 16;
  checkPositiveInteger('samplesPerProblem', samples);
  const order = options.order ?? 'shuffled';
  if (order !== 'shuffled' && order !== 'bursts') throw new Error(`unknown order '${order}'`);
  const problems =
    order === 'bursts' ? 1 : (options.problems ?? PROBLEMS_PER_INSTANCE * scaleInstances(options));
  checkPositiveInteger('problems', problems);
  const demonstrationTokens = options.demonstrationTokens ?? AUTHORS_DEMONSTRATION_TOKENS;
  checkPositiveInteger('demonstrationTokens', demonstrationTokens);
  const maxOutput = options.maxOutputTokens ?? AUTHORS_MAX_OUTPUT_TOKENS;
  checkPositiveInteger('maxOutputTokens', maxOutput);
  const problemMean = PROMPT_MEAN_TOKENS - demonstrationTokens - SAMPLE_INSTRUCTION_TOKENS.mean;
  const problemTokens = { ...PROBLEM_TOKENS, mean: Math.max(PROBLEM_TOKENS.min, problemMean) };
  const outputTokens = { ...OUTPUT_TOKENS, max: maxOutput };
  return defineWorkload('programming', options, (random) => {
    const tokenRandom = random.fork();
    const lengthRandom = random.fork();
    const demonstration = randomTokens(tokenRandom, demonstrationTokens);
    const problem = (serial: number) =>
      problemSamples(
        serial,
        samples,
        demonstration,
        problemTokens,
        outputTokens,
        maxOutput,
        tokenRandom,
        lengthRandom,
      );
    return interleaveSessions(problems, random.fork(), problem);
  });
}

function* problemSamples(
  serial: number,
  samples: number,
  demonstration: Tokens,
  problemTokens: typeof PROBLEM_TOKENS & { mean: number },
  outputTokens: typeof OUTPUT_TOKENS & { max: number },
  maxTokens: number,
  tokenRandom: Random,
  lengthRandom: Random,
): Generator<RequestDraft> {
  const sessionId = `programming-problem-${serial}`;
  const problem = randomTokens(tokenRandom, logNormalLength(lengthRandom, problemTokens));
  for (let i = 0; i < samples; i++) {
    const instruction = randomTokens(tokenRandom, logNormalLength(lengthRandom, SAMPLE_INSTRUCTION_TOKENS));
    yield {
      tokens: concatTokens([demonstration, problem, instruction]),
      outputTokens: logNormalLength(lengthRandom, outputTokens),
      maxTokens,
      sessionId,
    };
  }
}
