export { azureArrivals, azureRequests, readAzureFile } from './azure.ts';
export { type AzureRow, parseAzureCsv } from './azure-csv.ts';
export { blockTokens, MOONCAKE_BLOCK_TOKENS, writeBlockTokens } from './block-tokens.ts';
export { BAILIAN_FORMAT, type BlockTraceFormat, MOONCAKE_FORMAT } from './block-trace-format.ts';
export { mooncakeArrivals, mooncakeRequests, readMooncakeFile } from './mooncake.ts';
export { type MooncakeRow, parseMooncakeJsonl } from './mooncake-jsonl.ts';
export { meanRate } from './rate.ts';
export { readTraceText } from './read.ts';
export {
  parseWorkloadSpec,
  type TraceKind,
  type TraceReplayOptions,
  type TraceSpec,
  traceArrivals,
  traceKinds,
  traceRequests,
  type WorkloadSpec,
} from './registry.ts';
export { type PreciseTime, parseTimestamp, secondsBetween } from './timestamp.ts';
export type { TraceOptions, TraceWindow } from './window.ts';
export { withArrivals } from './with-arrivals.ts';
