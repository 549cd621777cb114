import type { Random } from '../core/random.ts';
import type { Tokens } from '../core/types.ts';
import { logNormalLength, normalCount } from './lengths.ts';
import { interleaveSessions } from './sessions.ts';
import { checkPositiveInteger, defineWorkload, type RequestDraft, scaleInstances } from './stream.ts';
import { concatTokens, randomTokens } from './tokens.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

export interface EmbodiedAgentOptions extends WorkloadOptions {
  /**
   * Chains in progress at once (the working set); each arrival is the next step of one of them.
   * Default `CHAINS_PER_INSTANCE` x instances; given, it is used whatever the cluster size (16 was
   * this generator's earlier, fixed default).
   */
  readonly activeChains?: number;
  /** Mean steps (LLM calls) per chain. Default 48, Table 1's requests per key portion. */
  readonly meanSteps?: number;
  /** Standard deviation of the steps per chain (normal, at least 1). Default 8. */
  readonly stepsStd?: number;
}

/**
 * The authors run 200 ALFWorld environments per 2 GPUs, scaled with the GPU count
 * (`e2e_virtualenv_config.py`: `[200, 3600, 15]` through `scale_to_gpu`), each a chain of steps. Per
 * instance: 100 chains in progress.
 */
export const CHAINS_PER_INSTANCE = 100;

/**
 * Lengths fitted to Table 1 (prompt 2285 +- 471, output 16 +- 13, key portion 76%). Table 1's 48
 * requests per key portion says the key portion is the chain's own context, not a demonstration shared
 * across chains, so the environment, task and demonstration form one block per chain after a short
 * instruction that all chains share.
 */
const INSTRUCTION_TOKENS = 40;
const CHAIN_CONTEXT_TOKENS = { mean: 1660, std: 260, min: 200 };
const OBSERVATION_TOKENS = { mean: 10, std: 7, min: 1 };
const OUTPUT_TOKENS = { mean: 16, std: 13, min: 1 };

/**
 * ALFWorld-like agent chains: step k+1's prompt is step k's prompt + step k's output + the environment's
 * observation. Chains are interleaved; the steps of one chain arrive in order under one session id.
 */
export function embodiedAgent(options: EmbodiedAgentOptions): Iterable<WorkloadRequest> {
  const activeChains = options.activeChains ?? CHAINS_PER_INSTANCE * scaleInstances(options);
  checkPositiveInteger('activeChains', activeChains);
  const steps = { mean: options.meanSteps ?? 48, std: options.stepsStd ?? 8, min: 1 };
  if (!(steps.mean >= 1) || !(steps.std >= 0)) throw new Error('meanSteps must be >= 1 and stepsStd >= 0');
  return defineWorkload('embodied-agent', options, (random) => {
    const tokenRandom = random.fork();
    const lengthRandom = random.fork();
    const instruction = randomTokens(tokenRandom, INSTRUCTION_TOKENS);
    const chain = (serial: number) => chainSteps(serial, instruction, steps, tokenRandom, lengthRandom);
    return interleaveSessions(activeChains, random.fork(), chain);
  });
}

function* chainSteps(
  serial: number,
  instruction: Tokens,
  steps: { mean: number; std: number; min: number },
  tokenRandom: Random,
  lengthRandom: Random,
): Generator<RequestDraft> {
  const sessionId = `embodied-agent-chain-${serial}`;
  const count = normalCount(lengthRandom, steps);
  let prompt = concatTokens([
    instruction,
    randomTokens(tokenRandom, logNormalLength(lengthRandom, CHAIN_CONTEXT_TOKENS)),
  ]);
  let previousOutput = 0;
  for (let step = 0; step < count; step++) {
    if (step > 0) {
      // This step sees what the previous one generated (stand-in tokens) and the environment's reply.
      const output = randomTokens(tokenRandom, previousOutput);
      const observation = randomTokens(tokenRandom, logNormalLength(lengthRandom, OBSERVATION_TOKENS));
      prompt = concatTokens([prompt, output, observation]);
    }
    previousOutput = logNormalLength(lengthRandom, OUTPUT_TOKENS);
    yield { tokens: prompt, outputTokens: previousOutput, sessionId };
  }
}
