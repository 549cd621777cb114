import type { Random } from '../core/random.ts';
import { logNormalLength } from './lengths.ts';
import { interleaveSessions } from './sessions.ts';
import { checkPositiveInteger, defineWorkload, type RequestDraft, scaleInstances } from './stream.ts';
import { concatTokens, randomTokens } from './tokens.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

export interface VideoQaOptions extends WorkloadOptions {
  /**
   * Videos being asked about at once (the working set); each arrival is a question about one of them.
   * Default `VIDEOS_PER_INSTANCE` x instances; given, it is used whatever the cluster size (32 was
   * this generator's earlier, fixed default).
   */
  readonly activeVideos?: number;
  /** Share of videos asked about only once (no sharing). Default 0.45: ~11% of requests, Table 1's 88% shared. */
  readonly oneOffShare?: number;
  /** Video tokens per question: a video gets max(1, round(tokens / this)) questions. Default 1024. */
  readonly tokensPerQuestion?: number;
}

/**
 * The authors ask about 100 videos per 2 GPUs, scaled with the GPU count (`e2e_videoQA_config.py`:
 * `scale_to_gpu([100, 3000, 10], gpus / 2)` and `[100, 3900, 13]`), every video's questions shuffled
 * over the run. Per instance: 50 videos in the working set.
 */
export const VIDEOS_PER_INSTANCE = 50;

/** A frame is 256 tokens; one frame per second of video (every 30th frame at 30 fps), as the authors did. */
const TOKENS_PER_FRAME = 256;
/** Frames per video, fitted so that prompts (weighted by questions per video) are Table 1's 9865 +- 5976. */
const FRAMES = { mean: 29, std: 19, min: 2, max: 256 };
/** A multiple-choice question with its options: ~0.5-1% of the prompt, Table 1's 99% key portion. */
const QUESTION_TOKENS = { mean: 50, std: 15, min: 8 };
/** The answer is the letter of an option plus formatting: Table 1's 4 +- 1.5. */
const OUTPUT_TOKENS = { mean: 4, std: 1.5, min: 1 };

/**
 * NExT-QA-like video question answering: a long block of video tokens (the key portion) and a short
 * question. As the authors did, a video gets questions in proportion to its length; some videos are
 * asked about once.
 */
export function videoQa(options: VideoQaOptions): Iterable<WorkloadRequest> {
  const activeVideos = options.activeVideos ?? VIDEOS_PER_INSTANCE * scaleInstances(options);
  checkPositiveInteger('activeVideos', activeVideos);
  const oneOffShare = options.oneOffShare ?? 0.45;
  const tokensPerQuestion = options.tokensPerQuestion ?? 1024;
  if (!(oneOffShare >= 0 && oneOffShare <= 1)) {
    throw new Error(`oneOffShare must be in [0, 1], got ${oneOffShare}`);
  }
  if (!(tokensPerQuestion > 0)) {
    throw new Error(`tokensPerQuestion must be positive, got ${tokensPerQuestion}`);
  }
  return defineWorkload('video-qa', options, (random) => {
    const tokenRandom = random.fork();
    const lengthRandom = random.fork();
    const video = (serial: number) => {
      const frames = logNormalLength(lengthRandom, FRAMES);
      const oneOff = lengthRandom.next() < oneOffShare;
      const questions = oneOff ? 1 : Math.max(1, Math.round((frames * TOKENS_PER_FRAME) / tokensPerQuestion));
      return videoQuestions(`video-qa-video-${serial}`, frames, questions, tokenRandom, lengthRandom);
    };
    return interleaveSessions(activeVideos, random.fork(), video);
  });
}

function* videoQuestions(
  sessionId: string,
  frames: number,
  questions: number,
  tokenRandom: Random,
  lengthRandom: Random,
): Generator<RequestDraft> {
  // Drawn when the first question arrives, copied into every question about this video.
  const video = randomTokens(tokenRandom, frames * TOKENS_PER_FRAME);
  for (let i = 0; i < questions; i++) {
    const question = randomTokens(tokenRandom, logNormalLength(lengthRandom, QUESTION_TOKENS));
    yield {
      tokens: concatTokens([video, question]),
      outputTokens: logNormalLength(lengthRandom, OUTPUT_TOKENS),
      sessionId,
    };
  }
}
