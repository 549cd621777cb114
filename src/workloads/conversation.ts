import { type Random, ZipfSampler } from '../core/random.ts';
import type { Tokens } from '../core/types.ts';
import { type LengthSpec, logNormalLength } from './lengths.ts';
import { interleaveSessions } from './sessions.ts';
import { checkPositiveInteger, defineWorkload, type RequestDraft, scaleInstances } from './stream.ts';
import { concatTokens, randomTokens } from './tokens.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

export interface ConversationOptions extends WorkloadOptions {
  /**
   * Conversations open at once (the working set); each arrival is the next turn of one of them.
   * Default `SESSIONS_PER_INSTANCE` x instances; given, it is used whatever the cluster size.
   */
  readonly activeSessions?: number;
  /** Mean turns (requests) per conversation, geometric on 1, 2, ... Default 2.0 (LMSYS-Chat-1M). */
  readonly meanTurns?: number;
  /**
   * Distinct applications, each with its own system prompt that starts every turn of its
   * conversations. Default `SYSTEM_PROMPTS`; 0: no system prompt (LMSYS-Chat-1M as published).
   */
  readonly systemPrompts?: number;
  /** Mean system prompt length in tokens (log-normal, drawn once per application). Default 512. */
  readonly systemPromptTokens?: number;
  /** How a conversation picks its application. Default 'zipf'. */
  readonly popularity?: 'uniform' | 'zipf';
  /** Zipf exponent over application ranks (with 'zipf'). Default 1.1. */
  readonly zipfExponent?: number;
  /** Most tokens a conversation may reach, prompt + answer (a longer turn ends it). Default 4096. */
  readonly maxContextTokens?: number;
}

/**
 * No paper serves chat with a session count to copy, so we take embodied-agent's 100 chains per
 * instance (Preble's other workload whose context grows request by request), so that the two compare
 * at one working-set size. Arrivals pick an open conversation uniformly, so at R req/s a conversation's
 * turns are activeSessions / R seconds apart on average: 50 s at 2 req/s per instance, a plausible
 * human reading-and-typing pause (an assumption, not a measured think time).
 */
export const SESSIONS_PER_INSTANCE = 100;

/**
 * LMSYS-Chat-1M (Zheng et al., ICLR 2024, Table 1; the dataset card repeats it): 2.0 turns per
 * conversation, 69.5 tokens per user prompt, 214.5 tokens per response. Table 1 gives means only.
 * Spread: Vidur (Agrawal et al., MLSys 2024, Table 1) measures Chat-1M (<= 4k) answers at mean 197,
 * median 139, which for a log-normal is a coefficient of variation of 1.0; we take std = mean for both
 * answers and user messages (for user messages an assumption: no published spread).
 */
export const LMSYS_MEAN_TURNS = 2.0;
const USER_TOKENS: LengthSpec = { mean: 69.5, std: 69.5, min: 1 };
const ANSWER_TOKENS: LengthSpec = { mean: 214.5, std: 214.5, min: 1 };

/**
 * System prompts are assumed, not cited: LMSYS-Chat-1M conversations mostly have none, while
 * production APIs mostly send one per application. Mooncake's public conversation trace (Kimi,
 * FAST'25) starts many requests with one shared 512-token block, so we take a mean of 512 tokens
 * (std half that), 8 applications, and the Preble authors' Zipf 1.1 for application popularity
 * (their ToolBench tool popularity). All three are options; `systemPrompts: 0` is LMSYS as published.
 */
export const SYSTEM_PROMPTS = 8;
const SYSTEM_PROMPT_TOKENS = 512;
const ZIPF_EXPONENT = 1.1;
/** Vidur's Chat-1M row keeps conversations of at most 4096 tokens; so does our `sharegpt-like`. */
const MAX_CONTEXT_TOKENS = 4096;

/** Settings after defaults, as one session needs them. */
interface Resolved {
  readonly meanTurns: number;
  readonly maxContextTokens: number;
}

/**
 * Multi-turn chat: turn k+1's prompt is turn k's prompt + turn k's answer + the next user message,
 * after the application's system prompt. Conversations interleave; one conversation's turns arrive in
 * order under one session id, `conversation-app-A-session-N` (or `conversation-session-N` without
 * system prompts). The answer's length is the turn's `outputTokens`; its tokens are drawn once and
 * reappear in every later turn.
 */
export function conversation(options: ConversationOptions): Iterable<WorkloadRequest> {
  const activeSessions = options.activeSessions ?? SESSIONS_PER_INSTANCE * scaleInstances(options);
  checkPositiveInteger('activeSessions', activeSessions);
  const meanTurns = options.meanTurns ?? LMSYS_MEAN_TURNS;
  if (!(meanTurns >= 1) || !Number.isFinite(meanTurns))
    throw new Error(`turns (meanTurns) must be a number >= 1, got ${meanTurns}`);
  const systemPrompts = options.systemPrompts ?? SYSTEM_PROMPTS;
  if (!Number.isInteger(systemPrompts) || systemPrompts < 0)
    throw new Error(`systemPrompts must be a non-negative integer, got ${systemPrompts}`);
  const systemPromptTokens = options.systemPromptTokens ?? SYSTEM_PROMPT_TOKENS;
  checkPositiveInteger('systemPromptTokens', systemPromptTokens);
  const popularity = options.popularity ?? 'zipf';
  if (popularity !== 'uniform' && popularity !== 'zipf')
    throw new Error(`popularity must be 'uniform' or 'zipf', got '${popularity}'`);
  const exponent = options.zipfExponent ?? ZIPF_EXPONENT;
  if (!(exponent > 0) || !Number.isFinite(exponent))
    throw new Error(`zipfExponent must be a positive number, got ${exponent}`);
  const maxContextTokens = options.maxContextTokens ?? MAX_CONTEXT_TOKENS;
  // The first turn must fit: a system prompt (at most half the context), a user and an answer token.
  if (!Number.isInteger(maxContextTokens) || maxContextTokens < 4)
    throw new Error(`maxContext (maxContextTokens) must be an integer >= 4, got ${maxContextTokens}`);
  const resolved: Resolved = { meanTurns, maxContextTokens };

  return defineWorkload('conversation', options, (random) => {
    const tokenRandom = random.fork();
    const lengthRandom = random.fork();
    const choiceRandom = random.fork();
    // A system prompt leaves room for at least one short turn: at most half the context.
    const systemSpec = {
      mean: systemPromptTokens,
      std: systemPromptTokens / 2,
      max: Math.floor(maxContextTokens / 2),
    };
    const systems = Array.from({ length: systemPrompts }, () =>
      randomTokens(tokenRandom, logNormalLength(lengthRandom, systemSpec)),
    );
    const zipf = popularity === 'zipf' && systemPrompts > 0 ? new ZipfSampler(systemPrompts, exponent) : null;
    const session = (serial: number) => {
      if (systemPrompts === 0) {
        const id = `conversation-session-${serial}`;
        return turns(id, new Uint32Array(0), resolved, tokenRandom, lengthRandom);
      }
      const app = zipf ? zipf.sample(choiceRandom) : choiceRandom.int(0, systemPrompts - 1);
      const id = `conversation-app-${app}-session-${serial}`;
      return turns(id, systems[app]!, resolved, tokenRandom, lengthRandom);
    };
    return interleaveSessions(activeSessions, random.fork(), session);
  });
}

/** Turns of a session: geometric in number (a user leaves after each turn with one chance). */
function turnCount(random: Random, mean: number): number {
  if (mean === 1) return 1;
  // Inverse CDF of the geometric distribution on {1, 2, ...} with success chance 1/mean.
  return 1 + Math.floor(Math.log(1 - random.next()) / Math.log(1 - 1 / mean));
}

function* turns(
  sessionId: string,
  system: Tokens,
  settings: Resolved,
  tokenRandom: Random,
  lengthRandom: Random,
): Generator<RequestDraft> {
  const count = turnCount(lengthRandom, settings.meanTurns);
  let prompt: Tokens = system;
  let previousAnswer = 0;
  for (let turn = 0; turn < count; turn++) {
    let user = logNormalLength(lengthRandom, USER_TOKENS);
    let answer = logNormalLength(lengthRandom, ANSWER_TOKENS);
    const fits = () => prompt.length + previousAnswer + user + answer <= settings.maxContextTokens;
    if (turn === 0) {
      // The first turn is drawn again until it fits (Vidur's <= 4k row keeps only what fits); in a
      // context too small for that to end soon, the last draw is cut to fit.
      for (let tries = 0; !fits() && tries < 100; tries++) {
        user = logNormalLength(lengthRandom, USER_TOKENS);
        answer = logNormalLength(lengthRandom, ANSWER_TOKENS);
      }
      if (!fits()) {
        const room = settings.maxContextTokens - prompt.length;
        user = Math.max(1, Math.min(user, Math.floor(room / 2)));
        answer = Math.min(answer, room - user);
      }
    } else if (!fits()) return; // the conversation has filled the context: it ends here
    // The previous answer's stand-in tokens, then the new user message.
    prompt = concatTokens([
      prompt,
      randomTokens(tokenRandom, previousAnswer),
      randomTokens(tokenRandom, user),
    ]);
    previousAnswer = answer;
    yield { tokens: prompt, outputTokens: answer, sessionId };
  }
}
