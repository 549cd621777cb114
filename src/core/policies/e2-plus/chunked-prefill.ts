import type { CostModel } from '../../cost-model/types.ts';

/** A prefill as a chunked-prefill engine runs it: its duration and its iterations. */
export interface ChunkedPrefill {
  /** Seconds from the first chunk's iteration to the last's end (the request's prefill time there). */
  readonly seconds: number;
  readonly iterations: number;
}

/**
 * Seconds to prefill `missed` prompt tokens after `cached` ones in chunks of at most `chunk` tokens,
 * each chunk in one iteration beside `decoders` decode steps at `context` tokens each: what the
 * engines do (running prefills take the chunk budget, decodes ride along). The single-batch
 * `prefillTime` misses both the chunks' repeated reads and the decodes beside them; measured on
 * Toolbench's cold start, it predicted 0.63-0.79 of the observed prefill time, the more so the larger
 * the batch (docs/e2.md, e2-plus, measurement log step 14).
 */
export function chunkedPrefill(
  model: CostModel,
  missed: number,
  cached: number,
  chunk: number,
  decoders: number,
  context: number,
): ChunkedPrefill {
  if (missed <= 0) return { seconds: 0, iterations: 0 };
  const step = Math.max(1, Math.floor(chunk));
  const decodeSeq = decoders * (context + 1);
  let seconds = 0;
  let iterations = 0;
  for (let done = 0; done < missed; done += step) {
    const n = Math.min(step, missed - done);
    const seq = cached + done + n;
    seconds += model.iterationTime({
      requests: decoders + 1,
      newTokens: n + decoders,
      seqTokens: seq + decodeSeq,
      newTimesSeq: n * seq + decodeSeq,
    });
    iterations++;
  }
  return { seconds, iterations };
}
