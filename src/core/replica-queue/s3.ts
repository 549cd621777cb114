import { admitInOrder, queueOrder } from './admission.ts';
import { predictedRemaining } from './predicted.ts';
import type { QueuedRequest, QueuePolicy } from './types.ts';

/**
 * S3 (Jin et al., NeurIPS 23, seed 002's [10]): memory is reserved for the predicted output, not
 * the worst case: each request holds KV for its uncached prompt plus its predicted remaining output
 * less one (the prefill's token needs no new KV), from admission to its finish. Queue order (FCFS), stopping at the
 * first request whose reserve does not fit. S3's supervisor: a request that outruns its prediction
 * (and so its reserve) is aborted and re-queued at the head with the revised prediction
 * (`requeueOnOutrun`; the predictor's re-prediction rule: next bucket or doubling), recomputing its
 * prompt and output so far. S3 ran without paged attention and also defragmented memory; paged KV
 * needs no defragmentation, so only the reservation and the supervisor are modelled. A request
 * without a prediction reserves nothing (fcfs), and no reserve runs past what the replica's memory could
 * ever hold (`outputCeiling`). Decode growth beyond the reserves (none with an exact predictor)
 * preempts as fcfs does.
 */
export function createS3Policy(): QueuePolicy {
  const reserveTokens = (request: QueuedRequest): number => {
    const remaining = predictedRemaining(request);
    if (!Number.isFinite(remaining)) return 0;
    const room = (request.outputCeiling ?? Number.POSITIVE_INFINITY) - (request.generatedTokens ?? 0);
    return Math.max(0, Math.min(remaining, room) - 1);
  };
  return {
    name: 's3',
    preempts: true,
    requeueOnOutrun: true,
    reserveTokens,
    select: (waiting, ctx) => admitInOrder(waiting, ctx, queueOrder(waiting.length), reserveTokens),
  };
}
