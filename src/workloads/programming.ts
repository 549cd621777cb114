import type { Random } from '../core/random.ts';
import type { Tokens } from '../core/types.ts';
import { logNormalLength } from './lengths.ts';
import { interleaveSessions } from './sessions.ts';
import { checkPositiveInteger, defineWorkload, type RequestDraft } from './stream.ts';
import { concatTokens, randomTokens } from './tokens.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

export interface ProgrammingOptions extends WorkloadOptions {
  /** Parallel samples (candidate programs) per problem, arriving one after another. Default 16. */
  readonly samplesPerProblem?: number;
}

/**
 * Lengths fitted to Table 1 (prompt 3871 +- 1656, output 190 +- 343, 97% shared, 78% key portion).
 * The demonstration is shared by all requests; the problem description (the key portion) by its
 * samples; a short per-sample instruction keeps each prompt unique, as Table 1's 97% (not 100%) shared
 * implies. A problem shorter than the demonstration makes the demonstration its key portion, shared by
 * every request: the source of Table 1's huge spread in requests per key portion.
 */
const DEMONSTRATION_TOKENS = 680;
const PROBLEM_TOKENS = { mean: 3080, std: 1650, min: 40, max: 16000 };
const SAMPLE_INSTRUCTION_TOKENS = { mean: 100, std: 60, min: 4 };
/** Heavy-tailed generated code; capped so a sample stays within a 16k context. */
const OUTPUT_TOKENS = { mean: 190, std: 343, min: 1, max: 8192 };

/** APPS-like program generation: demonstration + problem + several parallel samples per problem. */
export function programming(options: ProgrammingOptions): Iterable<WorkloadRequest> {
  const samples = options.samplesPerProblem ?? 16;
  checkPositiveInteger('samplesPerProblem', samples);
  return defineWorkload('programming', options, (random) => {
    const tokenRandom = random.fork();
    const lengthRandom = random.fork();
    const demonstration = randomTokens(tokenRandom, DEMONSTRATION_TOKENS);
    // One open problem at a time: its samples are consecutive arrivals.
    const problem = (serial: number) =>
      problemSamples(serial, samples, demonstration, tokenRandom, lengthRandom);
    return interleaveSessions(1, random.fork(), problem);
  });
}

function* problemSamples(
  serial: number,
  samples: number,
  demonstration: Tokens,
  tokenRandom: Random,
  lengthRandom: Random,
): Generator<RequestDraft> {
  const sessionId = `programming-problem-${serial}`;
  const problem = randomTokens(tokenRandom, logNormalLength(lengthRandom, PROBLEM_TOKENS));
  for (let i = 0; i < samples; i++) {
    const instruction = randomTokens(tokenRandom, logNormalLength(lengthRandom, SAMPLE_INSTRUCTION_TOKENS));
    yield {
      tokens: concatTokens([demonstration, problem, instruction]),
      outputTokens: logNormalLength(lengthRandom, OUTPUT_TOKENS),
      sessionId,
    };
  }
}
