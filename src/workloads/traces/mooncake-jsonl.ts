import { MOONCAKE_BLOCK_TOKENS } from './block-tokens.ts';
import { numberedLines } from './lines.ts';

/** One request of a Mooncake trace (FAST'25 release format). */
export interface MooncakeRow {
  /** Arrival in milliseconds (relative, as in the trace). */
  readonly timestampMs: number;
  readonly inputLength: number;
  readonly outputLength: number;
  /** Prefix-block hashes of the prompt, one per 512 tokens (the last block may be partial). */
  readonly hashIds: readonly number[];
  readonly lineNumber: number;
}

/**
 * The rows of a Mooncake JSONL trace, lazily, validated: each line must be a JSON object with a
 * numeric `timestamp` (ms, never decreasing), integer `input_length` >= 1 and `output_length` >= 0,
 * and `hash_ids` with exactly ceil(input_length / 512) non-negative integers.
 */
export function* parseMooncakeJsonl(text: string): Generator<MooncakeRow> {
  let previousMs = Number.NEGATIVE_INFINITY;
  for (const { text: line, lineNumber } of numberedLines(text)) {
    const fail = (why: string): never => {
      throw new Error(`mooncake trace line ${lineNumber}: ${why}`);
    };
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      return fail(`not valid JSON (${(error as Error).message})`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      return fail('expected a JSON object');
    const fields = value as Record<string, unknown>;
    const timestampMs = fields['timestamp'];
    const inputLength = fields['input_length'];
    const outputLength = fields['output_length'];
    const hashIds = fields['hash_ids'];
    if (typeof timestampMs !== 'number' || !Number.isFinite(timestampMs))
      return fail('missing numeric "timestamp"');
    if (!isInteger(inputLength, 1)) return fail('"input_length" must be a positive integer');
    if (!isInteger(outputLength, 0)) return fail('"output_length" must be a non-negative integer');
    if (!Array.isArray(hashIds) || !hashIds.every((id) => isInteger(id, 0))) {
      return fail('"hash_ids" must be an array of non-negative integers');
    }
    const blocks = Math.ceil(inputLength / MOONCAKE_BLOCK_TOKENS);
    if (hashIds.length !== blocks) {
      fail(
        `input_length ${inputLength} needs ${blocks} hash_ids of ${MOONCAKE_BLOCK_TOKENS} tokens, got ${hashIds.length}`,
      );
    }
    if (timestampMs < previousMs) fail(`timestamp ${timestampMs} goes back in time (previous ${previousMs})`);
    previousMs = timestampMs;
    yield { timestampMs, inputLength, outputLength, hashIds, lineNumber };
  }
}

function isInteger(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}
