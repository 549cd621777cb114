import { numberedLines } from './lines.ts';
import { type PreciseTime, parseTimestamp } from './timestamp.ts';

/** One row of an Azure LLM inference trace (`TIMESTAMP,ContextTokens,GeneratedTokens`). */
export interface AzureRow {
  readonly time: PreciseTime;
  readonly contextTokens: number;
  readonly generatedTokens: number;
  readonly lineNumber: number;
}

const HEADER = 'timestamp,contexttokens,generatedtokens';

/**
 * The rows of an Azure trace CSV, lazily. The header line is optional; rows must be in time order
 * (both 2023 files are), because replays assume arrivals never go back in time.
 */
export function* parseAzureCsv(text: string): Generator<AzureRow> {
  let previous: AzureRow | undefined;
  let first = true;
  for (const { text: line, lineNumber } of numberedLines(text)) {
    if (first && line.replace(/\s/g, '').toLowerCase() === HEADER) {
      first = false;
      continue;
    }
    first = false;
    const fail = (why: string): never => {
      throw new Error(`azure trace line ${lineNumber}: ${why}: '${line}'`);
    };
    const fields = line.split(',');
    if (fields.length !== 3) fail('expected 3 fields TIMESTAMP,ContextTokens,GeneratedTokens');
    let time: PreciseTime;
    try {
      time = parseTimestamp(fields[0]!);
    } catch (error) {
      return fail((error as Error).message);
    }
    const contextTokens = Number(fields[1]);
    const generatedTokens = Number(fields[2]);
    if (!Number.isInteger(contextTokens) || contextTokens < 1)
      fail('ContextTokens must be a positive integer');
    if (!Number.isInteger(generatedTokens) || generatedTokens < 0) {
      fail('GeneratedTokens must be a non-negative integer');
    }
    if (previous !== undefined && isBefore(time, previous.time)) {
      fail(`timestamp goes back in time (line ${previous.lineNumber} is later)`);
    }
    previous = { time, contextTokens, generatedTokens, lineNumber };
    yield previous;
  }
}

function isBefore(a: PreciseTime, b: PreciseTime): boolean {
  return a.seconds < b.seconds || (a.seconds === b.seconds && a.nanos < b.nanos);
}
