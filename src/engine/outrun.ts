import { isOutrun, type LengthPrediction } from '../core/length/types.ts';
import type { RequestState } from './request-state.ts';

export type Repredict = (id: string, generated: number, previous: LengthPrediction) => LengthPrediction;

/**
 * After a request's token: when it has outrun its prediction (and is not finished), ask for a new
 * one. Returns whether it was outrun. Without a `repredict` the prediction stays (and the request
 * still counts as outrun, so that a policy that re-queues on outrun sees it).
 */
export function reviseIfOutrun(r: RequestState, repredict: Repredict | undefined): boolean {
  const previous = r.prediction;
  if (previous === undefined || !isOutrun(previous, r.generated)) return false;
  if (repredict !== undefined) r.prediction = repredict(r.id, r.generated, previous);
  return true;
}
