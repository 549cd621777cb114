import { createHash } from 'node:crypto';
import { encode } from '@msgpack/msgpack';
import { XPublisher } from 'zeromq';
import type { Tokens } from '../core/types.ts';
import type { EngineEviction } from '../engine/types.ts';

export const DEFAULT_KV_BLOCK_SIZE = 16;

/** One vLLM KV event as msgspec's array-like, tagged encoding writes it: [tag, ...fields]. */
type KvEvent =
  | readonly ['BlockStored', bigint[], bigint | null, number[], number, null, null]
  | readonly ['BlockRemoved', bigint[], null]
  | readonly ['AllBlocksCleared'];

/**
 * `preble engine --kv-events`: the engine's prefix cache as vLLM publishes it
 * (vllm/distributed/kv_events.py): a ZMQ PUB socket sending, per engine iteration that changed the
 * cache, the multipart message [topic, sequence (8 bytes, big-endian), payload], where the payload is
 * a msgpack `KVEventBatch` [ts, [events...]] and each event is [tag, ...fields]:
 *   ['BlockStored', block_hashes, parent_block_hash | null, token_ids, block_size, lora_id, medium]
 *   ['BlockRemoved', block_hashes, medium]
 *   ['AllBlocksCleared']
 * Blocks are `blockSize` tokens; a block's hash chains its parent's: the first 8 bytes of
 * SHA-256(parent hash || token ids as u32 LE), as an unsigned 64-bit integer. A prompt's full blocks
 * are announced as stored at its first token (its prefill is complete and cached); a block is removed
 * when the engine evicts any of its tokens (the engine evicts by token runs, vLLM by blocks: a block
 * that lost its tail is no longer a usable block).
 *
 * The socket is an XPUB, so the engine knows how many subscribers it has (`subscribers`): a
 * subscriber that connects misses what was sent before (there is no replay endpoint).
 */
export class KvEventPublisher {
  private readonly socket = new XPublisher();
  private sequence = 0n;
  private subscriberCount = 0;
  private readonly announced = new Set<bigint>();
  private pending: KvEvent[] = [];
  private queue: Buffer[][] = [];
  private sending = false;
  private closed = false;

  private constructor(
    readonly blockSize: number,
    private readonly topic: string,
  ) {}

  /** Bind to `endpoint` (`tcp://host:port`; port `*` or 0 picks a free one). */
  static async bind(
    endpoint: string,
    blockSize = DEFAULT_KV_BLOCK_SIZE,
    topic = '',
  ): Promise<KvEventPublisher> {
    if (!Number.isInteger(blockSize) || blockSize < 1)
      throw new Error(`kv events: block size must be a positive integer, got ${blockSize}`);
    const p = new KvEventPublisher(blockSize, topic);
    await p.socket.bind(endpoint.replace(/:0$/, ':*'));
    void p.watchSubscriptions();
    return p;
  }

  /** The endpoint bound (the real port when a free one was picked). */
  get endpoint(): string {
    return this.socket.lastEndpoint ?? '';
  }

  /** Subscribers connected now. */
  get subscribers(): number {
    return this.subscriberCount;
  }

  /** A prompt's prefill is complete: its full blocks are cached. */
  stored(tokens: Tokens): void {
    const hashes = this.chain(tokens, Math.floor(tokens.length / this.blockSize));
    let from = 0;
    while (from < hashes.length && this.announced.has(hashes[from]!)) from++;
    if (from === hashes.length) return;
    const fresh = hashes.slice(from);
    for (const h of fresh) this.announced.add(h);
    this.pending.push([
      'BlockStored',
      fresh,
      from === 0 ? null : hashes[from - 1]!,
      Array.from(tokens.subarray(from * this.blockSize, hashes.length * this.blockSize)),
      this.blockSize,
      null,
      null,
    ]);
  }

  /** The engine evicted `path[keptTokens..]`: every announced block holding one of those tokens. */
  evicted(e: EngineEviction): void {
    const blocks = Math.floor(e.path.length / this.blockSize);
    const first = Math.floor(e.keptTokens / this.blockSize);
    if (first >= blocks) return;
    const hashes = this.chain(e.path, blocks);
    const removed: bigint[] = [];
    for (let i = first; i < blocks; i++) if (this.announced.delete(hashes[i]!)) removed.push(hashes[i]!);
    if (removed.length > 0) this.pending.push(['BlockRemoved', removed, null]);
  }

  /** Send what the last iteration changed as one batch (`ts` in wall-clock seconds). */
  flush(): void {
    if (this.pending.length === 0 || this.closed) {
      this.pending = [];
      return;
    }
    const payload = encode([Date.now() / 1000, this.pending], { useBigInt64: true });
    this.pending = [];
    const seq = Buffer.alloc(8);
    seq.writeBigUInt64BE(this.sequence++);
    this.queue.push([
      Buffer.from(this.topic),
      seq,
      Buffer.from(payload.buffer, payload.byteOffset, payload.length),
    ]);
    void this.drain();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    this.socket.close();
  }

  /** zeromq sends one message at a time: queued batches go out in order. */
  private async drain(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.queue.length > 0 && !this.closed) await this.socket.send(this.queue.shift()!);
    } catch {
      // closed while sending: nothing left to tell
    } finally {
      this.sending = false;
    }
  }

  /** XPUB hears subscriptions ([1, topic...]) and unsubscriptions ([0, topic...]). */
  private async watchSubscriptions(): Promise<void> {
    try {
      for await (const [frame] of this.socket) {
        if (frame === undefined || frame.length === 0) continue;
        if (frame[0] === 1) this.subscriberCount++;
        else if (frame[0] === 0) this.subscriberCount = Math.max(0, this.subscriberCount - 1);
      }
    } catch {
      // the socket closed
    }
  }

  /** The chained hashes of the first `blocks` full blocks of `tokens`. */
  private chain(tokens: Tokens, blocks: number): bigint[] {
    const out: bigint[] = [];
    const parent = Buffer.alloc(8);
    const block = Buffer.alloc(this.blockSize * 4);
    for (let b = 0; b < blocks; b++) {
      for (let i = 0; i < this.blockSize; i++) block.writeUInt32LE(tokens[b * this.blockSize + i]!, i * 4);
      const digest = createHash('sha256').update(parent).update(block).digest();
      const h = digest.readBigUInt64BE(0);
      out.push(h);
      parent.writeBigUInt64BE(h);
    }
    return out;
  }
}
