import type { QueuedRequest } from './types.ts';

/**
 * Predicted output tokens still to come: the prediction less what was generated, at least 1 (a point
 * inside a bucket may be passed before the bucket's top; the request is not finished, so one token is
 * certain). Infinity without a prediction: such a request sorts after every predicted one.
 */
export function predictedRemaining(
  request: Pick<QueuedRequest, 'predictedOutputTokens' | 'generatedTokens'>,
): number {
  const predicted = request.predictedOutputTokens;
  if (predicted === undefined) return Number.POSITIVE_INFINITY;
  return Math.max(1, predicted - (request.generatedTokens ?? 0));
}
