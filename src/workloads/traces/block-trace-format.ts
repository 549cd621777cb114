import { MOONCAKE_BLOCK_TOKENS } from './block-tokens.ts';

/**
 * A JSONL trace of requests with prefix-block hashes: each row has `timestamp`, `input_length`,
 * `output_length` and `hash_ids`, one id per block of `blockTokens` prompt tokens (the last block
 * may be partial), equal ids at equal positions meaning a reusable prefix. The formats differ in
 * the block size and the timestamp's unit.
 */
export interface BlockTraceFormat {
  /** The workload prefix (`NAME:FILE`) and the request ids' stem. */
  readonly name: 'mooncake' | 'bailian';
  readonly blockTokens: number;
  /** Milliseconds per unit of `timestamp`. */
  readonly msPerTimestampUnit: number;
}

/** Mooncake's traces (kvcache-ai/Mooncake, FAST'25 and arXiv releases): 512-token blocks, ms. */
export const MOONCAKE_FORMAT: BlockTraceFormat = {
  name: 'mooncake',
  blockTokens: MOONCAKE_BLOCK_TOKENS,
  msPerTimestampUnit: 1,
};

/**
 * Alibaba's Qwen-Bailian traces (alibaba-edu/qwen-bailian-usagetraces-anon, KVCache@ATC'25):
 * 16-token blocks, seconds; their session fields (`chat_id`, `parent_chat_id`, `turn`, `type`) are
 * read past: each row is a request at its own timestamp, later turns already carrying their history's
 * blocks.
 */
export const BAILIAN_FORMAT: BlockTraceFormat = {
  name: 'bailian',
  blockTokens: 16,
  msPerTimestampUnit: 1000,
};
