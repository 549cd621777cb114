export { type BatchItem, Engine, type EngineKvUsage, type EngineRequestInfo } from './engine.ts';
export {
  defaultChunkedPrefillTokens,
  defaultMaxRunning,
  defaultMinEvictionTokens,
  defaultQueuePolicy,
  type EngineOptions,
} from './options.ts';
export { OUTPUT_TOKEN_BIT, outputToken, promptHash } from './output-tokens.ts';
export type * from './types.ts';
