import { type Random, ZipfSampler } from '../core/random.ts';
import type { Tokens } from '../core/types.ts';
import { logNormalLength } from './lengths.ts';
import { checkPositiveInteger, defineWorkload, type RequestDraft } from './stream.ts';
import { concatTokens, randomTokens } from './tokens.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

export interface ToolbenchOptions extends WorkloadOptions {
  /**
   * Distinct tools. Default 300, the authors' ToolBench config per 2 GPUs. Under Zipf popularity the
   * requests sharing a tool grow with requests/tools: ~58 per request at 1000 requests (Table 1: 39).
   */
  readonly tools?: number;
  /** How requests pick a tool. Default 'zipf' (the authors' popularity-skewed config). */
  readonly popularity?: 'uniform' | 'zipf';
  /** Zipf exponent over tool ranks. Default 1.1, as the authors used (never scaled with the GPU count). */
  readonly zipfExponent?: number;
}

/**
 * Lengths fitted to Table 1 (prompt 1835 +- 742, output 43 +- 16, 85% shared, 76% key portion): a
 * system prompt shared by all, the tool's instructions and demonstrations (the key portion, longer
 * than the system prompt so that it stays the key) and a unique question.
 */
const SYSTEM_PROMPT_TOKENS = 160;
const TOOL_TOKENS = { mean: 1370, std: 680, min: SYSTEM_PROMPT_TOKENS + 40, max: 6000 };
const QUESTION_TOKENS = { mean: 200, std: 200, min: 8 };
const OUTPUT_TOKENS = { mean: 43, std: 16, min: 1 };

/** ToolBench-like tool use: system prompt + tool instructions (shared per tool) + the user's question. */
export function toolbench(options: ToolbenchOptions): Iterable<WorkloadRequest> {
  const tools = options.tools ?? 300;
  const popularity = options.popularity ?? 'zipf';
  const exponent = options.zipfExponent ?? 1.1;
  checkPositiveInteger('tools', tools);
  if (popularity !== 'uniform' && popularity !== 'zipf') {
    throw new Error(`unknown popularity '${popularity}'`);
  }
  if (!(exponent > 0)) throw new Error(`zipfExponent must be positive, got ${exponent}`);
  return defineWorkload('toolbench', options, (random) => toolDrafts(random, tools, popularity, exponent));
}

function* toolDrafts(
  random: Random,
  tools: number,
  popularity: 'uniform' | 'zipf',
  exponent: number,
): Generator<RequestDraft, never> {
  const lengthRandom = random.fork();
  const tokenRandom = random.fork();
  const choiceRandom = random.fork();
  const toolLengths = Array.from({ length: tools }, () => logNormalLength(lengthRandom, TOOL_TOKENS));
  const systemPrompt = randomTokens(tokenRandom, SYSTEM_PROMPT_TOKENS);
  // A tool's block is drawn the first time the tool is used, then copied into every request using it.
  const toolBlocks = new Map<number, Tokens>();
  const zipf = popularity === 'zipf' ? new ZipfSampler(tools, exponent) : undefined;
  for (;;) {
    const tool = zipf ? zipf.sample(choiceRandom) : choiceRandom.int(0, tools - 1);
    let block = toolBlocks.get(tool);
    if (!block) {
      block = randomTokens(tokenRandom, toolLengths[tool]!);
      toolBlocks.set(tool, block);
    }
    const question = randomTokens(tokenRandom, logNormalLength(lengthRandom, QUESTION_TOKENS));
    yield {
      tokens: concatTokens([systemPrompt, block, question]),
      outputTokens: logNormalLength(lengthRandom, OUTPUT_TOKENS),
    };
  }
}
