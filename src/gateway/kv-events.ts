import { decode } from '@msgpack/msgpack';
import { Subscriber } from 'zeromq';
import type { Tokens } from '../core/types.ts';

/** What a replica's KV events mean for the policy: `path[keptTokens..]` left its cache. */
export type EvictionSink = (path: Tokens, keptTokens: number) => void;

interface Block {
  /** Token ids from the root to the end of this block. */
  readonly path: Tokens;
  readonly blockSize: number;
}

/**
 * The gateway's view of one replica's KV-cache blocks, built from its events (vLLM's format, see
 * src/emulator/kv-events.ts): block hash -> the token path from the root to the block's end. A
 * BlockStored event carries its blocks' token ids and its parent's hash, so the paths come from the
 * events themselves and the gateway never needs the engine's hash function (vLLM's is seeded per
 * process). Removed blocks and cleared caches become `instanceEvicted` calls. The paths are in the
 * engine's token ids: they match the policy's prefix tree when the gateway's tokenizer is the
 * engine's (`preble engine` with the `chars` tokenizer, vLLM/SGLang with `hf:PATH` or `backend`).
 */
export class KvBlockMap {
  private readonly blocks = new Map<string, Block>();
  /** Blocks with no parent (first blocks of a prompt): what a cleared cache evicts. */
  private readonly roots = new Set<string>();
  /** Events whose parent block was never seen (a missed batch): their blocks stay unknown. */
  unknownParents = 0;

  get size(): number {
    return this.blocks.size;
  }

  /** Apply one decoded event ([tag, ...fields]). */
  apply(event: unknown, evicted: EvictionSink): void {
    if (!Array.isArray(event) || typeof event[0] !== 'string') return;
    switch (event[0]) {
      case 'BlockStored':
        this.stored(event[1], event[2], event[3], event[4]);
        return;
      case 'BlockRemoved':
        if (Array.isArray(event[1])) for (const h of event[1]) this.removed(h, evicted);
        return;
      case 'AllBlocksCleared':
        for (const key of this.roots) evicted(this.blocks.get(key)!.path, 0);
        this.blocks.clear();
        this.roots.clear();
        return;
    }
  }

  private stored(hashes: unknown, parent: unknown, tokenIds: unknown, blockSize: unknown): void {
    if (!Array.isArray(hashes) || !Array.isArray(tokenIds) || typeof blockSize !== 'number' || blockSize < 1)
      return;
    let prefix: Tokens = new Uint32Array(0);
    if (parent !== null && parent !== undefined) {
      const p = this.blocks.get(hashKey(parent));
      if (p === undefined) {
        this.unknownParents++;
        return;
      }
      prefix = p.path;
    }
    const full = new Uint32Array(prefix.length + tokenIds.length);
    full.set(prefix);
    for (let i = 0; i < tokenIds.length; i++) full[prefix.length + i] = Number(tokenIds[i]);
    for (let i = 0; i < hashes.length; i++) {
      const end = prefix.length + (i + 1) * blockSize;
      if (end > full.length) break;
      const key = hashKey(hashes[i]);
      this.blocks.set(key, { path: full.subarray(0, end), blockSize });
      if (i === 0 && prefix.length === 0) this.roots.add(key);
    }
  }

  private removed(hash: unknown, evicted: EvictionSink): void {
    const key = hashKey(hash);
    const block = this.blocks.get(key);
    if (block === undefined) return;
    this.blocks.delete(key);
    this.roots.delete(key);
    evicted(block.path, Math.max(0, block.path.length - block.blockSize));
  }
}

/** A block hash as a map key: vLLM sends integers (older) or bytes (newer, ExternalBlockHash). */
function hashKey(h: unknown): string {
  if (h instanceof Uint8Array) return Buffer.from(h.buffer, h.byteOffset, h.byteLength).toString('hex');
  return String(h);
}

/**
 * Subscribes to one replica's KV event socket and feeds its evictions to `sink`. ZMQ reconnects by
 * itself, so a replica that starts later (or restarts) is picked up. A gap in the sequence numbers
 * (batches missed while disconnected) is counted: vLLM's replay socket is not used, and blocks stored
 * in a missed batch stay unknown (their later removal cannot be told).
 */
export class KvEventSubscriber {
  private readonly socket = new Subscriber();
  readonly map = new KvBlockMap();
  private lastSequence: bigint | undefined;
  /** Batches the sequence numbers show as missed. */
  missed = 0n;
  /** Batches received. */
  batches = 0;
  private closed = false;

  constructor(
    readonly endpoint: string,
    private readonly sink: EvictionSink,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  start(): void {
    this.socket.connect(this.endpoint);
    this.socket.subscribe();
    void this.run();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.close();
  }

  private async run(): Promise<void> {
    try {
      for await (const frames of this.socket) {
        try {
          this.receive(frames);
        } catch (error) {
          this.onError(error);
        }
      }
    } catch (error) {
      if (!this.closed) this.onError(error);
    }
  }

  /** One message: [topic, sequence (8 bytes BE), payload] (a message without a topic frame is accepted). */
  receive(frames: readonly Buffer[]): void {
    const payload = frames[frames.length - 1];
    const seqFrame = frames.length >= 3 ? frames[frames.length - 2] : undefined;
    if (payload === undefined) return;
    if (seqFrame !== undefined && seqFrame.length === 8) {
      const seq = seqFrame.readBigUInt64BE(0);
      if (this.lastSequence !== undefined && seq > this.lastSequence + 1n)
        this.missed += seq - this.lastSequence - 1n;
      this.lastSequence = seq;
    }
    const batch = decode(payload, { useBigInt64: true }) as unknown;
    if (!Array.isArray(batch) || !Array.isArray(batch[1])) return;
    this.batches++;
    for (const event of batch[1]) this.map.apply(event, this.sink);
  }
}
