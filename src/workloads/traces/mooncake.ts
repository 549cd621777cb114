import type { WorkloadRequest } from '../types.ts';
import { writeBlockTokens } from './block-tokens.ts';
import { type BlockTraceFormat, MOONCAKE_FORMAT } from './block-trace-format.ts';
import { type MooncakeRow, parseMooncakeJsonl } from './mooncake-jsonl.ts';
import { readTraceText } from './read.ts';
import {
  type CheckedWindow,
  checkWindow,
  reiterable,
  slice,
  type TraceOptions,
  type TraceWindow,
} from './window.ts';

/**
 * Requests replaying a block-hash trace (Mooncake's by default). Each prompt is its hash blocks'
 * tokens in order (the last block cut to input_length), so requests whose `hash_ids` agree on the
 * first k blocks share exactly their first k blocks' tokens: the trace's prefix reuse, reproduced.
 * Arrivals are seconds from the first row kept, divided by `scale`. Lazy, and re-iterable (same stream).
 */
export function mooncakeRequests(
  text: string,
  options: TraceOptions,
  format: BlockTraceFormat = MOONCAKE_FORMAT,
): Iterable<WorkloadRequest> {
  const window = checkWindow(options);
  return reiterable(function* () {
    let index = window.offset;
    for (const [arrival, row] of timedRows(text, window, format)) {
      yield {
        id: `${format.name}-${index++}`,
        arrival,
        tokens: promptTokens(row, options.seed, format.blockTokens),
        outputTokens: Math.max(1, row.outputLength),
        workload: format.name,
      };
    }
  });
}

/** Just the arrival times of a block-hash trace window. */
export function mooncakeArrivals(
  text: string,
  window: TraceWindow = {},
  format: BlockTraceFormat = MOONCAKE_FORMAT,
): number[] {
  return Array.from(timedRows(text, checkWindow(window), format), ([arrival]) => arrival);
}

/** `mooncakeRequests` over a file. */
export function readMooncakeFile(path: string, options: TraceOptions): Iterable<WorkloadRequest> {
  return mooncakeRequests(readTraceText(path), options);
}

function promptTokens(row: MooncakeRow, seed: number, blockTokens: number): Uint32Array {
  const tokens = new Uint32Array(row.inputLength);
  row.hashIds.forEach((hashId, block) => {
    const offset = block * blockTokens;
    writeBlockTokens(tokens, offset, seed, hashId, Math.min(blockTokens, row.inputLength - offset));
  });
  return tokens;
}

function* timedRows(
  text: string,
  window: CheckedWindow,
  format: BlockTraceFormat,
): Generator<[number, MooncakeRow]> {
  let firstMs: number | undefined;
  for (const row of slice(parseMooncakeJsonl(text, format), window.offset, window.limit)) {
    firstMs ??= row.timestampMs;
    yield [(row.timestampMs - firstMs) / 1000 / window.scale, row];
  }
}
