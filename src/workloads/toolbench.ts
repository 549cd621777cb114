import { type Random, ZipfSampler } from '../core/random.ts';
import type { Tokens } from '../core/types.ts';
import { logNormalLength } from './lengths.ts';
import { checkPositiveInteger, defineWorkload, type RequestDraft, scaleInstances } from './stream.ts';
import { concatTokens, randomTokens } from './tokens.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

export interface ToolbenchOptions extends WorkloadOptions {
  /**
   * Distinct tools (the working set). Default: scaled with the cluster as the authors' generators do,
   * per instance `TOOLS_PER_INSTANCE` (uniform) or `ZIPF_TOOLS_PER_INSTANCE` (Zipf). Given, it is
   * used whatever the cluster size (`tools=300` with Zipf 1.1 is this generator's earlier default).
   */
  readonly tools?: number;
  /**
   * How requests pick a tool. Default 'uniform': the authors' end-to-end ToolBench configs use
   * `LoadDistribution.EVEN` (`e2e_2r_toolbench_config.py`, `e2e_4r_toolbench_config.py`).
   */
  readonly popularity?: 'uniform' | 'zipf';
  /** Zipf exponent over tool ranks (with 'zipf'). Default 1.1, the authors' (never scaled with the GPU count). */
  readonly zipfExponent?: number;
}

/**
 * The authors' end-to-end ToolBench configs draw 200 evenly popular tools per 2 GPUs and scale them
 * with the GPU count (`scale_to_gpu([200, 3600, 12], gpus / 2)`, `e2e_2r_toolbench_config.py`,
 * `e2e_4r_toolbench_config.py`); `e2e_toolbench_config.py` uses 300 per 2 GPUs. We take 200: the
 * configs of the 2- and 4-GPU clusters our grid runs. Per instance: 100.
 */
export const TOOLS_PER_INSTANCE = 100;
/**
 * The authors' Zipf config: 1000 tools per 2 GPUs, Zipf 1.1 (`e2e_234r_toolbench_config.py`,
 * `scale_to_gpu([1000, 3600, 18, 1.1], gpus / 2)`; that helper also scales the exponent, a bug we do
 * not copy). Per instance: 500.
 */
export const ZIPF_TOOLS_PER_INSTANCE = 500;

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
  const popularity = options.popularity ?? 'uniform';
  const perInstance = popularity === 'zipf' ? ZIPF_TOOLS_PER_INSTANCE : TOOLS_PER_INSTANCE;
  const tools = options.tools ?? perInstance * scaleInstances(options);
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
