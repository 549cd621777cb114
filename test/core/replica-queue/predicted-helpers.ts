import type { QueuedRequest, RunningRequest } from '../../../src/core/replica-queue/types.ts';
import { req } from './helpers.ts';

/** A waiting request with a predicted total output and output so far. */
export function predicted(
  id: string,
  prompt: number,
  predictedOutputTokens: number,
  at = 0,
  generatedTokens = 0,
): QueuedRequest {
  return { ...req(id, prompt, 0, at), predictedOutputTokens, generatedTokens };
}

/** A decoding request with a prediction and output so far. */
export function decoding(
  id: string,
  predictedOutputTokens: number,
  generatedTokens: number,
  preemptions = 0,
): RunningRequest {
  return { id, enqueuedAt: 0, preemptions, predictedOutputTokens, generatedTokens };
}
