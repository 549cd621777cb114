import type { Random } from '../core/random.ts';
import type { Tokens } from '../core/types.ts';
import { logNormalLength } from './lengths.ts';
import { interleaveSessions } from './sessions.ts';
import { checkPositiveInteger, defineWorkload, type RequestDraft, scaleInstances } from './stream.ts';
import { concatTokens, randomTokens } from './tokens.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

export interface LoogleOptions extends WorkloadOptions {
  /**
   * Documents being asked about at once (the working set); each arrival is a question about one of
   * them. Default `DOCUMENTS_PER_INSTANCE` x instances; given, it is used whatever the cluster size
   * (16 was this generator's earlier, fixed default).
   */
  readonly activeDocuments?: number;
  /** Share of documents asked about only once. Default 0.6: ~8% of requests, Table 1's 91% shared. */
  readonly oneOffShare?: number;
}

/**
 * The authors ask about 24 LooGLE documents per 2 GPUs, scaled with the GPU count
 * (`e2e_234r_loogle_config.py`: `scale_to_gpu([24, 393, 0.7], gpus / 2)`), questions shuffled over the
 * run. Per instance: 12 documents in the working set.
 */
export const DOCUMENTS_PER_INSTANCE = 12;

/** LooGLE's system prompt is 13 tokens. */
const SYSTEM_PROMPT_TOKENS = 13;
/** Fitted to Table 1's prompt 23474 +- 6105 (documents longer than the context are cut, as LooGLE does). */
const DOCUMENT_TOKENS = { mean: 23400, std: 6100, min: 2000, max: 64000 };
const QUESTION_TOKENS = { mean: 30, std: 15, min: 4 };
/** Questions about a document that is asked about more than once. */
const QUESTIONS_PER_DOCUMENT = { mean: 17, std: 7, min: 2 };
const OUTPUT_TOKENS = { mean: 16, std: 9.9, min: 1 };

/** LooGLE-like long-document QA: a 13-token system prompt + a long document (key portion) + a question. */
export function loogle(options: LoogleOptions): Iterable<WorkloadRequest> {
  const activeDocuments = options.activeDocuments ?? DOCUMENTS_PER_INSTANCE * scaleInstances(options);
  checkPositiveInteger('activeDocuments', activeDocuments);
  const oneOffShare = options.oneOffShare ?? 0.6;
  if (!(oneOffShare >= 0 && oneOffShare <= 1)) {
    throw new Error(`oneOffShare must be in [0, 1], got ${oneOffShare}`);
  }
  return defineWorkload('loogle', options, (random) => {
    const tokenRandom = random.fork();
    const lengthRandom = random.fork();
    const systemPrompt = randomTokens(tokenRandom, SYSTEM_PROMPT_TOKENS);
    const document = (serial: number) => {
      const oneOff = lengthRandom.next() < oneOffShare;
      const questions = oneOff ? 1 : logNormalLength(lengthRandom, QUESTIONS_PER_DOCUMENT);
      return documentQuestions(`loogle-doc-${serial}`, systemPrompt, questions, tokenRandom, lengthRandom);
    };
    return interleaveSessions(activeDocuments, random.fork(), document);
  });
}

function* documentQuestions(
  sessionId: string,
  systemPrompt: Tokens,
  questions: number,
  tokenRandom: Random,
  lengthRandom: Random,
): Generator<RequestDraft> {
  // Drawn when the first question arrives, copied into every question about this document.
  const document = randomTokens(tokenRandom, logNormalLength(lengthRandom, DOCUMENT_TOKENS));
  for (let i = 0; i < questions; i++) {
    const question = randomTokens(tokenRandom, logNormalLength(lengthRandom, QUESTION_TOKENS));
    yield {
      tokens: concatTokens([systemPrompt, document, question]),
      outputTokens: logNormalLength(lengthRandom, OUTPUT_TOKENS),
      sessionId,
    };
  }
}
