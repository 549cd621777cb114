import { Random } from '../../core/random.ts';
import { randomTokens } from '../tokens.ts';
import type { WorkloadRequest } from '../types.ts';
import { type AzureRow, parseAzureCsv } from './azure-csv.ts';
import { readTraceText } from './read.ts';
import { secondsBetween } from './timestamp.ts';
import {
  type CheckedWindow,
  checkWindow,
  reiterable,
  slice,
  type TraceOptions,
  type TraceWindow,
} from './window.ts';

/**
 * Requests replaying an Azure LLM trace: its arrivals (seconds from the first row kept, divided by
 * `scale`) and lengths. The trace says nothing about content, so every prompt is fresh random
 * tokens drawn from `seed`: no prefix sharing beyond chance. Lazy, and re-iterable (same stream).
 */
export function azureRequests(text: string, options: TraceOptions): Iterable<WorkloadRequest> {
  const window = checkWindow(options);
  return reiterable(function* () {
    const random = new Random(options.seed);
    let index = window.offset;
    for (const [arrival, row] of timedRows(text, window)) {
      yield {
        id: `azure-${index++}`,
        arrival,
        tokens: randomTokens(random, row.contextTokens),
        outputTokens: Math.max(1, row.generatedTokens),
        workload: 'azure',
      };
    }
  });
}

/**
 * Just the arrival times of an Azure trace window, to give another workload the trace's bursty
 * arrival pattern (with `withArrivals`), as the paper does with the Azure trace in its section 4.3.
 */
export function azureArrivals(text: string, window: TraceWindow = {}): number[] {
  return Array.from(timedRows(text, checkWindow(window)), ([arrival]) => arrival);
}

/** `azureRequests` over a file. */
export function readAzureFile(path: string, options: TraceOptions): Iterable<WorkloadRequest> {
  return azureRequests(readTraceText(path), options);
}

function* timedRows(text: string, window: CheckedWindow): Generator<[number, AzureRow]> {
  let first: AzureRow | undefined;
  for (const row of slice(parseAzureCsv(text), window.offset, window.limit)) {
    first ??= row;
    yield [secondsBetween(first.time, row.time) / window.scale, row];
  }
}
