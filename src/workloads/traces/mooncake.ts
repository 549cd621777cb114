import type { WorkloadRequest } from '../types.ts';
import { MOONCAKE_BLOCK_TOKENS, writeBlockTokens } from './block-tokens.ts';
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
 * Requests replaying a Mooncake trace. Each prompt is its hash blocks' tokens in order (the last
 * block cut to input_length), so requests whose `hash_ids` agree on the first k blocks share
 * exactly their first 512·k tokens: the trace's prefix reuse, reproduced. Arrivals are seconds from
 * the first row kept, divided by `scale`. Lazy, and re-iterable (same stream).
 */
export function mooncakeRequests(text: string, options: TraceOptions): Iterable<WorkloadRequest> {
  const window = checkWindow(options);
  return reiterable(function* () {
    let index = window.offset;
    for (const [arrival, row] of timedRows(text, window)) {
      yield {
        id: `mooncake-${index++}`,
        arrival,
        tokens: promptTokens(row, options.seed),
        outputTokens: Math.max(1, row.outputLength),
        workload: 'mooncake',
      };
    }
  });
}

/** Just the arrival times of a Mooncake trace window. */
export function mooncakeArrivals(text: string, window: TraceWindow = {}): number[] {
  return Array.from(timedRows(text, checkWindow(window)), ([arrival]) => arrival);
}

/** `mooncakeRequests` over a file. */
export function readMooncakeFile(path: string, options: TraceOptions): Iterable<WorkloadRequest> {
  return mooncakeRequests(readTraceText(path), options);
}

function promptTokens(row: MooncakeRow, seed: number): Uint32Array {
  const tokens = new Uint32Array(row.inputLength);
  row.hashIds.forEach((hashId, block) => {
    const offset = block * MOONCAKE_BLOCK_TOKENS;
    writeBlockTokens(tokens, offset, seed, hashId, Math.min(MOONCAKE_BLOCK_TOKENS, row.inputLength - offset));
  });
  return tokens;
}

function* timedRows(text: string, window: CheckedWindow): Generator<[number, MooncakeRow]> {
  let firstMs: number | undefined;
  for (const row of slice(parseMooncakeJsonl(text), window.offset, window.limit)) {
    firstMs ??= row.timestampMs;
    yield [(row.timestampMs - firstMs) / 1000 / window.scale, row];
  }
}
