import { type BlockTraceFormat, MOONCAKE_FORMAT } from './block-trace-format.ts';
import { numberedLines } from './lines.ts';

/** One request of a block-hash trace (Mooncake's FAST'25 release format, or another `BlockTraceFormat`). */
export interface MooncakeRow {
  /** Arrival in milliseconds (relative, as in the trace; converted from the format's unit). */
  readonly timestampMs: number;
  readonly inputLength: number;
  readonly outputLength: number;
  /** Prefix-block hashes of the prompt, one per block of the format's size (the last may be partial). */
  readonly hashIds: readonly number[];
  readonly lineNumber: number;
}

/**
 * The rows of a block-hash JSONL trace, lazily, validated: each line must be a JSON object with a
 * numeric `timestamp` (in the format's unit, never decreasing), integer `input_length` >= 1 and
 * `output_length` >= 0, and `hash_ids` with exactly ceil(input_length / block size) non-negative
 * integers (of any size). Other fields are read past.
 */
export function* parseMooncakeJsonl(
  text: string,
  format: BlockTraceFormat = MOONCAKE_FORMAT,
): Generator<MooncakeRow> {
  const blockTokens = format.blockTokens;
  let previousMs = Number.NEGATIVE_INFINITY;
  for (const { text: line, lineNumber } of numberedLines(text)) {
    const fail = (why: string): never => {
      throw new Error(`${format.name} trace line ${lineNumber}: ${why}`);
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
    const timestamp = fields['timestamp'];
    const inputLength = fields['input_length'];
    const outputLength = fields['output_length'];
    const hashIds = fields['hash_ids'];
    if (typeof timestamp !== 'number' || !Number.isFinite(timestamp))
      return fail('missing numeric "timestamp"');
    const timestampMs = timestamp * format.msPerTimestampUnit;
    if (!isInteger(inputLength, 1)) return fail('"input_length" must be a positive integer');
    if (!isInteger(outputLength, 0)) return fail('"output_length" must be a non-negative integer');
    // Any size: a trace may publish raw 64-bit block hashes, past 2^53; parsed as doubles, distinct
    // ones stay distinct unless they lie within 2,048 of each other.
    if (!Array.isArray(hashIds) || !hashIds.every((id) => Number.isInteger(id) && id >= 0)) {
      return fail('"hash_ids" must be an array of non-negative integers');
    }
    const blocks = Math.ceil(inputLength / blockTokens);
    if (hashIds.length !== blocks) {
      fail(
        `input_length ${inputLength} needs ${blocks} hash_ids of ${blockTokens} tokens, got ${hashIds.length}`,
      );
    }
    if (timestampMs < previousMs) {
      const previous = previousMs / format.msPerTimestampUnit;
      fail(
        `timestamp ${timestamp} goes back in time (previous ${previous}); rows must be in time order: jq -c -s 'sort_by(.timestamp)[]' FILE sorts them`,
      );
    }
    previousMs = timestampMs;
    yield { timestampMs, inputLength, outputLength, hashIds, lineNumber };
  }
}

function isInteger(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}
