import type { CostModel } from '../core/cost-model/types.ts';
import type { QueueContext, QueuePolicy } from '../core/replica-queue/types.ts';
import type { Role, Tokens } from '../core/types.ts';
import { HostKvPool } from './host-swap.ts';
import type { MigratedKv } from './migration.ts';
import { type EngineOptions, resolveEngineOptions } from './options.ts';
import { type Repredict, reviseIfOutrun } from './outrun.ts';
import { type CacheNode, PrefixCache } from './prefix-cache.ts';
import { type Phase, RequestState } from './request-state.ts';
import type {
  AdoptedKv,
  EngineEviction,
  EngineFinish,
  EngineKvReady,
  EngineRequest,
  EngineSnapshot,
  EngineStart,
  Iteration,
  SubmitOptions,
} from './types.ts';

export type { EngineOptions } from './options.ts';

/** Where the KV memory is, in tokens (tests, metrics). */
export interface EngineKvUsage {
  readonly capacityTokens: number;
  /** Held by the prefix cache (pinned or not). */
  readonly cacheTokens: number;
  /** Held by running requests outside the cache: reserved uncached prompt, generated tokens. */
  readonly privateTokens: number;
  /** cache + private: never above capacity. */
  readonly usedTokens: number;
  /** Cache tokens no running request pins (evictable). */
  readonly evictableTokens: number;
  /** Cache tokens pinned by running requests. */
  readonly pinnedTokens: number;
  /** Decode growth a non-preempting policy still holds for its running requests. */
  readonly reservedTokens: number;
  /**
   * KV held for transfers (each held request's `kvTokens`; a prefix two of them share counts twice):
   * pinned, so part of `pinnedTokens` and `usedTokens` until `releaseKv`.
   */
  readonly heldTokens: number;
  /** GPU memory set aside for a live migration's incoming KV (`reserveIncoming`), part of `usedTokens`. */
  readonly incomingTokens: number;
  /** The host pool: its capacity, and the KV of the requests swapped out to it. */
  readonly hostCapacityTokens: number;
  readonly hostTokens: number;
}

/** One request's part in the last iteration (tests, detailed metrics). */
export interface BatchItem {
  readonly id: string;
  readonly phase: 'prefill' | 'decode';
  /** new_r and seq_r of the cost model's batch shape. */
  readonly newTokens: number;
  readonly seqTokens: number;
  /** Admitted by this iteration (first admission or readmission after a preemption). */
  readonly joined: boolean;
  /** Tokens of `targetTokens` found cached at its latest admission. */
  readonly cachedTokens: number;
  /** What its latest admission prefills: the prompt, or the prompt plus the output so far. */
  readonly targetTokens: number;
}

/** A request's state inside the engine (tests, debugging). */
export interface EngineRequestInfo {
  readonly phase: Phase;
  /** Tokens of its sequence pinned in the prefix cache. */
  readonly pinnedTokens: number;
  readonly kvTokens: number;
  readonly privateTokens: number;
  readonly generated: number;
}

const IDLE: Iteration = Object.freeze({
  duration: 0,
  events: Object.freeze({
    started: [],
    firstTokens: [],
    finished: [],
    evictions: [],
    preempted: [],
    kvReady: [],
  }),
  batchRequests: 0,
  prefillTokens: 0,
  decodeTokens: 0,
});

const NONE_READY: readonly EngineKvReady[] = Object.freeze([]);

/** What part of a request an engine would hold (`Engine.kvNeed`). */
export type KvLeg = 'whole' | 'prefill' | 'decode';

const defaultLeg: Record<Role, KvLeg> = { mixed: 'whole', prefill: 'prefill', decode: 'decode' };

/**
 * An emulated model instance (vLLM/SGLang-like), pure and clock-agnostic: `step(now)` forms the next
 * batch and runs one iteration; the caller advances its clock by the returned duration.
 *
 * An iteration, in order:
 * 1. Decode growth: every decoding request takes one more KV token. Short of memory, the least
 *    recently used unpinned cache is evicted (at least `minEvictionTokens` at a time, the last
 *    victim in part); if that is not enough, running requests are preempted
 *    (most recently admitted first, vLLM's rule; recomputed on readmission). A non-preempting
 *    policy never gets here (its reserve), and the engine throws if it does.
 * 2. Running prefills continue first within the chunked-prefill token budget.
 * 3. If no request was preempted this iteration, the queue policy selects waiting requests with the
 *    budget left, the free batch slots and `freeKvTokens` = free + evictable - reserves; they are
 *    admitted in its order: each pins its cached prefix and reserves its whole uncached part.
 *    A policy with `preemptFor` (prompts first: splitwise-mixed) may first have decoding requests
 *    preempted, by recomputation, so that a waiting prompt fits (`preemptForPrompt`).
 * 4. Duration = cost model's `iterationTime` of the batch (decodes: new 1, seq = KV after; prefill
 *    chunks: new = chunk, seq = position after; a fully cached prompt recomputes its last token).
 * 5. At the iteration's end: each prefill chunk's prompt tokens join the cache (shared at once);
 *    a completed prefill yields a token (the first, unless recomputing); a decode step yields one;
 *    a request that has yielded all its tokens inserts its sequence into the cache, unpins, finishes.
 *
 * Prefill/decode disaggregation (`role`, `submit`'s `stopAfterPrefill`, `adopt`, `releaseKv`):
 * - A prefill-only request ends its leg at step 5 with its first token: the iteration that computes
 *   its last prompt chunk also yields the first output token (DistServe and Splitwise: TTFT is the
 *   prefill instance's; vLLM's disaggregated prefill runs with max_tokens 1). It leaves the batch,
 *   reports `kvReady`, and its prompt stays pinned in the cache (counted as used memory, never
 *   evicted nor preempted: the prefill instance's memory is the transfer's buffer, DistServe's pull
 *   mode) until `releaseKv`, which unpins it; the prompt then stays cached like any other prefix.
 * - `adopt` queues a request whose KV arrived, in the adopt queue (FIFO). At the start of the next
 *   iteration (step 0, before decode growth) adopted requests join the batch in order, each only if
 *   its new KV (what the cache does not already hold), its reserve and this iteration's decode
 *   growth fit in free + evictable memory; the first that does not fit waits, with those behind it,
 *   until memory frees (a decode instance's queue). Admitted, its prompt joins the prefix cache
 *   (pinned), its generated tokens' KV is private, and it decodes from this iteration on.
 * - A decode-role engine admits no prefill: it cannot recompute, so a preempted request is swapped
 *   out instead (its KV leaves GPU memory; the copy is timed and counted only when the host pool has
 *   room for it, else not modelled) to the head of the adopt queue, and readmitted with its KV as above.
 *   A mixed engine preempts adopted requests by recomputation like any other, unless it has a host pool.
 *
 * Host KV pool (`hostKvTokens`, host-swap.ts; vLLM's swap preemption, FastServe): a preempted decoding
 * request whose KV (prompt + output so far) fits in the host pool is swapped out there instead of
 * being recomputed, to the head of the adopt queue, and swapped back in as adopted KV is admitted above
 * (only what the GPU cache lacks is copied back; its cache hit stays its first admission's). Each copy
 * adds bytes / `swapBandwidth` to the iteration that does it. Under a policy that ranks requests
 * (`QueuePolicy.priority`: fastserve), swapped requests resume in rank order, and only while no waiting
 * request ranks better.
 *
 * Live migration (migration.ts): `reserveIncoming`/`releaseIncoming` set GPU memory aside on the
 * destination, `suspend` and `migrateOut` take a decoding request off the source, `adoptMigrated`
 * queues it on the destination.
 * - Held KV may leave waiting requests unable to run while nothing else runs: the engine is then
 *   stalled, `hasWork()` is false and `step` idles, until `releaseKv`, `abort`, `submit` or `adopt`.
 */
export class Engine {
  readonly costModel: CostModel;
  readonly kvCapacityTokens: number;
  readonly queuePolicy: QueuePolicy;
  readonly chunkedPrefillTokens: number;
  readonly maxRunning: number;
  readonly enableChunking: boolean;
  readonly padPrefillChunks: boolean;
  readonly minEvictionTokens: number;
  readonly exclusivePrefixes: boolean;
  private readonly repredict: Repredict | undefined;
  private currentRole: Role;

  private readonly cache = new PrefixCache();
  private readonly byId = new Map<string, RequestState>();
  /** Queue order: oldest first, preempted requests back at the head. */
  private readonly waiting: RequestState[] = [];
  /** Admission order: the last is the most recently admitted. */
  private readonly running: RequestState[] = [];
  /** Adopted requests waiting for memory, in order (swapped-out ones back at the head). */
  private readonly adoptQueue: RequestState[] = [];
  /** Prefill-only requests holding their KV, and the sum of their `kvTokens`. */
  private heldCount = 0;
  private heldTokens = 0;
  /** Waiting work cannot run until held KV is released (or something changes). */
  private stalled = false;
  private readonly batch: RequestState[] = [];
  private readonly admitted: RequestState[] = [];
  private privateTokens = 0;
  private reservedTokens = 0;
  private promptTokensTotal = 0;
  private cachedPromptTokensTotal = 0;
  private generationTokensTotal = 0;
  private preemptionsTotal = 0;
  private readonly host: HostKvPool;
  /** Seconds of host swaps this iteration (added to its duration), and swaps so far. */
  private swapSeconds = 0;
  private swapOutsTotal = 0;
  private swapInsTotal = 0;
  /** GPU KV reserved for incoming migrations, and requests suspended for their stop-and-copy. */
  private incomingTokens = 0;
  private migratingCount = 0;

  constructor(options: EngineOptions) {
    const o = resolveEngineOptions(options);
    this.costModel = o.costModel;
    this.kvCapacityTokens = o.kvCapacityTokens;
    this.queuePolicy = o.queuePolicy;
    this.chunkedPrefillTokens = o.chunkedPrefillTokens;
    this.maxRunning = o.maxRunning;
    this.enableChunking = o.enableChunking;
    this.padPrefillChunks = o.padPrefillChunks;
    this.minEvictionTokens = o.minEvictionTokens;
    this.exclusivePrefixes = o.exclusivePrefixes;
    this.currentRole = o.role;
    this.repredict = o.repredict;
    this.host = new HostKvPool(o.hostKvTokens, o.swapBandwidth, o.costModel.kvBytesPerToken);
  }

  /** What this engine runs now (a fleet action may change it: `setRole`). */
  get role(): Role {
    return this.currentRole;
  }

  /**
   * Whether the engine holds nothing `role` cannot run, so `setRole(role)` would succeed: always for
   * `mixed` (it runs both legs and whole requests); for `prefill`, only prefill legs (waiting, running or
   * holding their KV); for `decode`, no prefill (nothing waiting, every running request decoding, no
   * held KV).
   */
  canTakeRole(role: Role): boolean {
    if (role === 'mixed') return true;
    if (role === 'prefill') {
      for (const r of this.byId.values()) if (!r.stopAfterPrefill) return false;
      return true;
    }
    return (
      this.waiting.length === 0 && this.heldCount === 0 && this.running.every((r) => r.phase === 'decode')
    );
  }

  /**
   * Change the role at run time (a fleet's role change: Splitwise borrows a prompt or token machine
   * into the mixed pool and gives it back). Throws when the engine holds work the new role cannot run
   * (`canTakeRole`); the simulator first moves such an engine to `mixed`, which runs everything, and
   * settles it on the new role once that work is gone. The prefix cache stays.
   */
  setRole(role: Role): void {
    if (!this.canTakeRole(role))
      throw new Error(
        `engine: cannot become a ${role} engine while it holds work a ${role} engine cannot run`,
      );
    this.currentRole = role;
  }

  /**
   * Enqueue a request at the tail of the waiting queue. Throws for a duplicate id, an empty prompt,
   * a bad output count, or a request that could never fit in memory even alone. An output count of 0
   * is served as 1 (a prefill always yields a token). Generation stops at `maxTokens`; without one,
   * under a non-preempting policy, at the policy's default reserve (the server's default max_tokens).
   *
   * `options.stopAfterPrefill`: the prefill leg only (see the class comment); the default on a
   * prefill-role engine, where false is refused. A decode-role engine refuses every submit: it
   * takes requests through `adopt`.
   */
  submit(request: EngineRequest, now: number, options: SubmitOptions = {}): void {
    if (this.role === 'decode') {
      throw new Error(
        `engine: request '${request.id}' submitted to a decode-role engine, which runs no prefill (adopt its KV instead)`,
      );
    }
    const stopAfterPrefill = options.stopAfterPrefill ?? this.role === 'prefill';
    if (!stopAfterPrefill && this.role === 'prefill') {
      throw new Error(
        `engine: request '${request.id}' cannot run whole on a prefill-role engine (stopAfterPrefill: false)`,
      );
    }
    const r = this.newLeg(request, now, stopAfterPrefill);
    const need = this.needOf(r);
    if (need > this.kvCapacityTokens) {
      throw new Error(
        `engine: request '${request.id}' needs ${need} KV tokens, more than the capacity of ${this.kvCapacityTokens}`,
      );
    }
    this.byId.set(r.id, r);
    this.waiting.push(r);
    this.stalled = false;
  }

  /**
   * The KV tokens `request` would need here at its peak, for `leg`: run whole, only its prefill leg
   * (`submit` with `stopAfterPrefill`), or its decode as `adopt` takes it (default: what this engine's
   * role runs): what `submit` and `adopt` check against `kvCapacityTokens`, so a caller can refuse a
   * request an instance could never hold before placing it (a gateway's context-length check).
   */
  kvNeed(request: EngineRequest, now: number, leg: KvLeg = defaultLeg[this.role]): number {
    if (leg === 'decode') {
      // It arrives as `adopt` takes it: KV for its prompt, one token generated.
      const r = this.newRequest(request, now, true);
      if (r.outputTokens <= 1) return r.prompt.length;
      this.asAdopted(r, 1);
      return this.adoptedNeed(r);
    }
    return this.needOf(this.newLeg(request, now, leg === 'prefill', true));
  }

  /** A new request as adopted with `generated` tokens out: its KV holds its prompt and all but the last. */
  private asAdopted(r: RequestState, generated: number): void {
    r.generated = generated;
    r.kvTokens = r.prompt.length + generated - 1;
    r.promptTokens = r.kvTokens;
    if (r.maxTokens !== undefined) r.maxOutputTokens = r.maxTokens - generated;
  }

  /** Peak KV of an adopted request: what it holds plus what is left of its output (or the reserve). */
  private adoptedNeed(r: RequestState): number {
    return r.kvTokens + Math.max(mostOutput(r) - r.generated, this.queuePolicy.reserveTokens(r));
  }

  /** A new request's state, for its prefill leg only when `stopAfterPrefill`. */
  private newLeg(
    request: EngineRequest,
    now: number,
    stopAfterPrefill: boolean,
    query = false,
  ): RequestState {
    const r = this.newRequest(request, now, query);
    if (stopAfterPrefill) {
      // Its output grows elsewhere: here it yields only its first token, which takes no KV growth.
      r.stopAfterPrefill = true;
      r.maxOutputTokens = 1;
    }
    return r;
  }

  /** Peak KV of a new request: its prompt plus the most it may grow (its output, or the queue policy's reserve). */
  private needOf(r: RequestState): number {
    const reserve = this.queuePolicy.reserveTokens(r);
    return r.promptTokens + (r.stopAfterPrefill ? reserve : Math.max(mostOutput(r) - 1, reserve));
  }

  /**
   * Take a request whose KV arrived from another instance (`kv`: a `kvReady` event of the prefill
   * engine): it waits in the adopt queue for memory, then decodes from `kv.generated` tokens on and
   * finishes as usual, with `cachedTokens` = its whole prompt (computed elsewhere) unless a
   * preemption made this engine recompute it. Its `started` event comes at its admission. Throws on
   * a prefill-role engine, for a duplicate id, bad counts, `kvTokens` other than prompt + generated - 1,
   * a request with no output left to decode, or one that could never fit in memory alone.
   */
  adopt(request: EngineRequest, kv: AdoptedKv, now: number): void {
    if (this.role === 'prefill') {
      throw new Error(
        `engine: request '${request.id}' adopted by a prefill-role engine, which runs no decode`,
      );
    }
    const r = this.newRequest(request, now);
    const { kvTokens, generated } = kv;
    if (!Number.isInteger(generated) || generated < 1) {
      throw new Error(
        `engine: adopted request '${request.id}' generated must be an integer >= 1, got ${generated}`,
      );
    }
    if (kvTokens !== r.prompt.length + generated - 1) {
      throw new Error(
        `engine: adopted request '${request.id}' has KV for ${kvTokens} tokens, expected prompt + generated - 1 = ${r.prompt.length + generated - 1}`,
      );
    }
    if (generated >= r.outputTokens) {
      throw new Error(
        `engine: adopted request '${request.id}' has nothing left to decode (generated ${generated} of ${r.outputTokens})`,
      );
    }
    this.asAdopted(r, generated);
    const need = this.adoptedNeed(r);
    if (need > this.kvCapacityTokens) {
      throw new Error(
        `engine: adopted request '${request.id}' needs ${need} KV tokens, more than the capacity of ${this.kvCapacityTokens}`,
      );
    }
    r.phase = 'adopting';
    this.byId.set(r.id, r);
    this.adoptQueue.push(r);
    this.stalled = false;
  }

  /**
   * End a held request's transfer: its KV is unpinned (the prompt stays cached, evictable by LRU)
   * and the request leaves this engine. False, doing nothing, when the id is not here (already
   * released, aborted, unknown), so a late or repeated release is harmless; throws when the request
   * is here but holds no KV (waiting or running): releasing it would lose a request.
   */
  releaseKv(id: string): boolean {
    const r = this.byId.get(id);
    if (r === undefined) return false;
    if (r.phase !== 'held')
      throw new Error(`engine: request '${id}' holds no KV to release (it is ${r.phase})`);
    this.drop(r);
    return true;
  }

  /**
   * Live migration, destination (migration.ts): set `tokens` of GPU KV aside for an incoming copy,
   * evicting unpinned cache if needed. Returns the evictions, or undefined (nothing changed) when
   * free + evictable memory, less reserves, lacks them.
   */
  reserveIncoming(tokens: number): EngineEviction[] | undefined {
    if (tokens > this.admissibleTokens()) return undefined;
    const out: EngineEviction[] = [];
    const short = tokens - this.freeTokens();
    if (short > 0) this.evict(short, out);
    this.incomingTokens += tokens;
    return out;
  }

  /** Give back memory `reserveIncoming` set aside (the copy arrived or was aborted). */
  releaseIncoming(tokens: number): void {
    if (tokens > this.incomingTokens)
      throw new Error(`engine: releasing ${tokens} incoming KV tokens of ${this.incomingTokens}`);
    this.incomingTokens -= tokens;
    this.stalled = false;
  }

  /**
   * Live migration, source: a decoding request leaves the batch for the stop-and-copy, keeping its KV
   * (phase `migrating`) until `migrateOut`. Throws unless it is decoding here.
   */
  suspend(id: string): void {
    const r = this.byId.get(id);
    if (r === undefined || r.phase !== 'decode')
      throw new Error(`engine: cannot suspend '${id}' for a migration (${r?.phase ?? 'not here'})`);
    this.running.splice(this.running.indexOf(r), 1);
    r.phase = 'migrating';
    this.migratingCount++;
  }

  /** Live migration, source: a suspended request rejoins the batch (the migration was aborted). */
  resume(id: string): void {
    const r = this.byId.get(id);
    if (r === undefined || r.phase !== 'migrating')
      throw new Error(`engine: cannot resume '${id}' (${r?.phase ?? 'not here'})`);
    r.phase = 'decode';
    this.running.push(r);
    this.migratingCount--;
    this.stalled = false;
  }

  /**
   * Live migration, source: the request (suspended, or decoding) leaves with its KV: its memory is
   * freed (its prompt stays cached, unpinned) and what the destination adopts is returned.
   */
  migrateOut(id: string): MigratedKv {
    const r = this.byId.get(id);
    if (r === undefined || (r.phase !== 'migrating' && r.phase !== 'decode'))
      throw new Error(`engine: cannot migrate '${id}' out (${r?.phase ?? 'not here'})`);
    if (r.phase === 'decode') this.running.splice(this.running.indexOf(r), 1);
    else this.migratingCount--;
    this.release(r);
    r.phase = 'gone';
    this.byId.delete(id);
    this.stalled = false;
    return {
      kvTokens: r.kvTokens,
      generated: r.generated,
      cachedTokens: Math.min(r.admittedCached, r.prompt.length),
    };
  }

  /**
   * Queued move, source (Aladdin's re-balancing; src/sim/migration.ts): a request that waits here and
   * was never admitted leaves the queue; it holds no memory and no KV, so nothing is copied and the
   * caller submits it elsewhere. False, changing nothing, for any other (admitted, preempted back to the
   * queue, a prefill-only leg whose decode is bound to this KV, or not here): a move that came too late
   * is refused.
   */
  withdraw(id: string): boolean {
    const r = this.byId.get(id);
    if (r === undefined || r.phase !== 'waiting' || r.started || r.stopAfterPrefill) return false;
    this.waiting.splice(this.waiting.indexOf(r), 1);
    r.phase = 'gone';
    this.byId.delete(id);
    this.stalled = false;
    return true;
  }

  /**
   * Live migration, destination: adopt a migrated request (`adopt`'s checks) at the head of the adopt
   * queue; it started elsewhere, so its admission here sends no `started` event, and its finish reports
   * the source's cache hit (`kv.cachedTokens`).
   */
  adoptMigrated(request: EngineRequest, kv: MigratedKv, now: number): void {
    this.adopt(request, kv, now);
    const r = this.adoptQueue.pop()!;
    r.started = true;
    r.admittedCached = kv.cachedTokens;
    this.adoptQueue.unshift(r);
  }

  /**
   * Evict every cached prefix no request pins (an instance leaving the fleet), reported as `step`
   * reports evictions. Pinned prefixes (running, adopted or held requests) stay.
   */
  evictAll(): EngineEviction[] {
    const out: EngineEviction[] = [];
    this.cache.evict(this.cache.evictableTokens, out);
    return out;
  }

  /** Something can run: running requests, or waiting ones unless held or migrating KV stalls them. */
  hasWork(): boolean {
    return (
      this.running.length > 0 || (!this.stalled && (this.waiting.length > 0 || this.adoptQueue.length > 0))
    );
  }

  /** Run one iteration starting at `now` (see the class comment); its events happen at its end. */
  step(now: number): Iteration {
    this.cache.now = now;
    if (!this.hasWork()) return IDLE;
    const evictions: EngineEviction[] = [];
    const preempted: string[] = [];
    const started: EngineStart[] = [];
    this.swapSeconds = 0;

    if (this.adoptQueue.length > 0) this.admitAdopted(now, started, evictions);
    this.growDecodes(evictions, preempted);
    const budget = this.continuePrefills();
    // As in vLLM, an iteration that had to preempt admits nobody (unless nothing is left running).
    if (this.waiting.length > 0 && (preempted.length === 0 || this.running.length === 0)) {
      this.admit(now, budget, started, evictions, preempted);
    }

    const batch = this.batch;
    batch.length = 0;
    let newTokens = 0;
    let seqTokens = 0;
    let newTimesSeq = 0;
    let prefillTokens = 0;
    let decodeTokens = 0;
    for (const r of this.running) {
      if (r.phase === 'decode') {
        r.batchPhase = 'decode';
        r.batchNew = 1;
        r.batchSeq = r.kvTokens;
        r.joined = r.adoptedNow;
        r.adoptedNow = false;
        decodeTokens++;
      } else if (r.chunk > 0) {
        r.batchPhase = 'prefill';
        r.batchNew = r.chunk;
        // A fully cached prompt recomputes its last token in place; a recomputed prefix runs from its start.
        r.batchSeq =
          r.done === r.seq.length && r.recomputeLeft === 0 ? r.done : r.done - r.recomputeLeft + r.chunk;
        prefillTokens += r.chunk;
      } else {
        continue;
      }
      batch.push(r);
      newTokens += r.batchNew;
      seqTokens += r.batchSeq;
      newTimesSeq += r.batchNew * r.batchSeq;
    }
    if (batch.length === 0) {
      if (this.heldCount === 0 && this.incomingTokens === 0 && this.migratingCount === 0) {
        throw new Error('engine: requests are waiting but none can run (internal error)');
      }
      // Held or migrating KV leaves no room for what waits: idle until something is released.
      this.stalled = true;
      return {
        duration: 0,
        events: { started, firstTokens: [], finished: [], evictions, preempted, kvReady: [] },
        batchRequests: 0,
        prefillTokens: 0,
        decodeTokens: 0,
      };
    }
    if (this.padPrefillChunks && prefillTokens > 0 && prefillTokens < this.chunkedPrefillTokens) {
      // TetriInfer's zero padding of the last chunk: computed like a sequence of its own.
      const pad = this.chunkedPrefillTokens - prefillTokens;
      newTokens += pad;
      seqTokens += pad;
      newTimesSeq += pad * pad;
    }
    // Host swaps are copies before the model step, on its stream (host-swap.ts).
    const duration =
      this.costModel.iterationTime({ requests: batch.length, newTokens, seqTokens, newTimesSeq }) +
      this.swapSeconds;

    this.cache.now = now + duration;
    const firstTokens: string[] = [];
    const finished: EngineFinish[] = [];
    let kvReady: EngineKvReady[] | undefined;
    let outrun: RequestState[] | undefined;
    for (const r of batch) {
      if (r.phase === 'prefill') {
        const target = r.seq.length;
        const recomputed = Math.min(r.chunk, r.recomputeLeft);
        r.recomputeLeft -= recomputed;
        if (r.done < target) r.done = Math.min(target, r.done + r.chunk - recomputed);
        r.chunk = 0;
        this.insertPrompt(r);
        if (r.done < target || r.recomputeLeft > 0) continue;
        r.kvTokens = target;
        r.phase = 'decode';
      }
      // A completed prefill or a decode step yielded one token.
      r.generated++;
      this.generationTokensTotal++;
      if (r.generated === 1) firstTokens.push(r.id);
      if (r.generated >= r.outputTokens) finished.push(this.finish(r));
      else if (r.stopAfterPrefill) {
        kvReady ??= [];
        kvReady.push(this.hold(r));
      } else if (reviseIfOutrun(r, this.repredict) && this.requeuesOutrun()) {
        outrun ??= [];
        outrun.push(r);
      }
    }
    if (outrun !== undefined) this.requeueOutrun(outrun, preempted);
    if (finished.length > 0 || kvReady !== undefined || outrun !== undefined)
      this.dropNotRunning(this.running);

    return {
      duration,
      events: { started, firstTokens, finished, evictions, preempted, kvReady: kvReady ?? NONE_READY },
      batchRequests: batch.length,
      prefillTokens,
      decodeTokens,
    };
  }

  /**
   * Drop a request at any stage (waiting, running, holding KV, waiting to be adopted), freeing its
   * memory; no event. False when it is not here.
   */
  abort(id: string): boolean {
    const r = this.byId.get(id);
    if (r === undefined) return false;
    if (r.phase === 'held') {
      this.drop(r);
      return true;
    }
    if (r.phase === 'waiting') {
      this.waiting.splice(this.waiting.indexOf(r), 1);
    } else if (r.phase === 'adopting') {
      this.adoptQueue.splice(this.adoptQueue.indexOf(r), 1);
      this.host.give(r.hostTokens);
      r.hostTokens = 0;
    } else if (r.phase === 'migrating') {
      this.release(r);
      this.migratingCount--;
    } else {
      this.running.splice(this.running.indexOf(r), 1);
      this.release(r);
    }
    r.phase = 'gone';
    this.byId.delete(id);
    this.stalled = false;
    return true;
  }

  /**
   * Load signals, SGLang-style: `usedKvTokens` is what running requests hold (pinned cache and
   * private tokens); `freeKvTokens` = capacity - used - reserves, so it counts the evictable cache as
   * free. `queuedPrefillTokens`: the uncached part of every waiting request (matched now: O(queue))
   * plus the prefill running requests still have to do. Prompt and cached totals count finished
   * requests and ended prefill legs (`kvReady`). Held KV is pinned, so it is part of `usedKvTokens`.
   */
  snapshot(): EngineSnapshot {
    let queued = 0;
    for (const r of this.waiting) queued += r.seq.length - this.cache.match(r.cursor, r.seq);
    for (const r of this.running)
      if (r.phase === 'prefill') queued += r.seq.length - r.done + r.recomputeLeft;
    const used = this.cache.pinnedTokens + this.privateTokens;
    return {
      running: this.running.length,
      waiting: this.waiting.length,
      queuedPrefillTokens: queued,
      usedKvTokens: used,
      freeKvTokens: Math.max(0, this.kvCapacityTokens - used - this.reservedTokens),
      kvCapacityTokens: this.kvCapacityTokens,
      heldRequests: this.heldCount,
      heldKvTokens: this.heldTokens,
      adoptWaiting: this.adoptQueue.length,
      promptTokensTotal: this.promptTokensTotal,
      cachedPromptTokensTotal: this.cachedPromptTokensTotal,
      generationTokensTotal: this.generationTokensTotal,
      preemptionsTotal: this.preemptionsTotal,
      ...(this.host.capacityTokens > 0
        ? { swapOutsTotal: this.swapOutsTotal, swapInsTotal: this.swapInsTotal }
        : {}),
    };
  }

  kvUsage(): EngineKvUsage {
    return {
      capacityTokens: this.kvCapacityTokens,
      cacheTokens: this.cache.tokens,
      privateTokens: this.privateTokens,
      usedTokens: this.cache.tokens + this.privateTokens,
      evictableTokens: this.cache.evictableTokens,
      pinnedTokens: this.cache.pinnedTokens,
      reservedTokens: this.reservedTokens,
      heldTokens: this.heldTokens,
      incomingTokens: this.incomingTokens,
      hostCapacityTokens: this.host.capacityTokens,
      hostTokens: this.host.used,
    };
  }

  /** Host swaps so far: requests swapped out to the host pool and back in. */
  swapStats(): { readonly swapOuts: number; readonly swapIns: number } {
    return { swapOuts: this.swapOutsTotal, swapIns: this.swapInsTotal };
  }

  /** The last iteration's batch, in batch order (built on demand). */
  lastBatch(): BatchItem[] {
    return this.batch.map((r) => ({
      id: r.id,
      phase: r.batchPhase,
      newTokens: r.batchNew,
      seqTokens: r.batchSeq,
      joined: r.joined,
      cachedTokens: r.admittedCached,
      targetTokens: r.seq.length,
    }));
  }

  /**
   * Tokens of `tokens`, from its start, whose KV this engine's prefix cache holds now (pinned or not):
   * what a KV transfer to this instance need not move. Read-only: a fresh match, no LRU touch, no pin,
   * no split. Unpinned, the prefix may still be evicted before the request that needs it is admitted.
   */
  cachedPrefixTokens(tokens: Tokens): number {
    return this.cache.match(this.cache.newCursor(), tokens);
  }

  /** A request's state, or undefined when it is not here (finished, aborted, unknown). */
  request(id: string): EngineRequestInfo | undefined {
    const r = this.byId.get(id);
    if (r === undefined) return undefined;
    return {
      phase: r.phase,
      pinnedTokens: r.pin.endLen,
      kvTokens: r.kvTokens,
      privateTokens: r.privateTokens,
      generated: r.generated,
    };
  }

  /** Whole-state consistency check for tests (walks everything). Throws on a violation. */
  checkInvariants(): void {
    const expected = new Map<CacheNode, number>();
    let privateTokens = 0;
    let reserved = 0;
    for (const r of this.running) {
      if (r.phase !== 'prefill' && r.phase !== 'decode')
        throw new Error(`engine: running '${r.id}' is ${r.phase}`);
      if (this.byId.get(r.id) !== r) throw new Error(`engine: running '${r.id}' is not indexed`);
      for (let n = r.pin; n !== this.cache.root; n = n.parent!) expected.set(n, (expected.get(n) ?? 0) + 1);
      const held = r.phase === 'prefill' ? r.seq.length : r.kvTokens;
      if (r.pin.endLen + r.privateTokens !== held) {
        throw new Error(
          `engine: '${r.id}' holds ${r.pin.endLen} + ${r.privateTokens} tokens, expected ${held}`,
        );
      }
      privateTokens += r.privateTokens;
      reserved += r.reserveLeft;
    }
    for (const r of this.waiting) {
      if (r.phase !== 'waiting' || this.byId.get(r.id) !== r)
        throw new Error(`engine: waiting '${r.id}' is off`);
    }
    let hostTokens = 0;
    for (const r of this.adoptQueue) {
      if (r.phase !== 'adopting' || this.byId.get(r.id) !== r || r.pin !== this.cache.root)
        throw new Error(`engine: adopting '${r.id}' is off`);
      if (r.kvTokens !== r.prompt.length + r.generated - 1)
        throw new Error(`engine: adopting '${r.id}' has KV for ${r.kvTokens} tokens`);
      if (r.hostTokens !== 0 && r.hostTokens !== r.kvTokens)
        throw new Error(`engine: swapped '${r.id}' holds ${r.hostTokens} host tokens of ${r.kvTokens}`);
      hostTokens += r.hostTokens;
    }
    if (hostTokens !== this.host.used) throw new Error('engine: host token count');
    if (this.host.used > this.host.capacityTokens) throw new Error('engine: host pool over capacity');
    let held = 0;
    let heldTokens = 0;
    let migrating = 0;
    for (const r of this.byId.values()) {
      if (r.phase === 'migrating') {
        // Out of the batch for its last copy, still holding its decode KV.
        migrating++;
        for (let n = r.pin; n !== this.cache.root; n = n.parent!) expected.set(n, (expected.get(n) ?? 0) + 1);
        if (r.pin.endLen + r.privateTokens !== r.kvTokens || r.kvTokens !== r.prompt.length + r.generated - 1)
          throw new Error(`engine: migrating '${r.id}' holds ${r.pin.endLen} + ${r.privateTokens} tokens`);
        privateTokens += r.privateTokens;
        reserved += r.reserveLeft;
        continue;
      }
      if (r.phase !== 'held') continue;
      held++;
      heldTokens += r.kvTokens;
      for (let n = r.pin; n !== this.cache.root; n = n.parent!) expected.set(n, (expected.get(n) ?? 0) + 1);
      if (r.pin.endLen !== r.kvTokens || r.kvTokens !== r.prompt.length || r.privateTokens !== 0)
        throw new Error(`engine: held '${r.id}' pins ${r.pin.endLen} of ${r.kvTokens} KV tokens`);
      if (r.reserveLeft !== 0 || r.generated !== 1) throw new Error(`engine: held '${r.id}' is off`);
    }
    if (held !== this.heldCount || heldTokens !== this.heldTokens) throw new Error('engine: held count');
    if (migrating !== this.migratingCount) throw new Error('engine: migrating count');
    if (
      this.byId.size !==
      this.running.length + this.waiting.length + this.adoptQueue.length + held + migrating
    )
      throw new Error('engine: index size');
    if (this.role === 'decode' && (this.waiting.length > 0 || this.running.some((r) => r.phase !== 'decode')))
      throw new Error('engine: a decode-role engine has a prefill');
    if (privateTokens !== this.privateTokens) throw new Error('engine: private token count');
    if (reserved !== this.reservedTokens) throw new Error('engine: reserved token count');
    if (this.incomingTokens < 0) throw new Error('engine: incoming token count');
    if (this.cache.tokens + this.privateTokens + this.incomingTokens > this.kvCapacityTokens)
      throw new Error('engine: over capacity');
    this.cache.check(expected);
  }

  /** Step 1: one KV token per decoding request; evict, then preempt, when short. */
  private growDecodes(evictions: EngineEviction[], preempted: string[]): void {
    let need = 0;
    for (const r of this.running) if (r.phase === 'decode') need++;
    if (need === 0) return;
    if (need > this.freeTokens()) {
      this.evict(need - this.freeTokens(), evictions);
      const victims: RequestState[] = [];
      while (need > this.freeTokens()) {
        if (!this.queuePolicy.preempts) {
          throw new Error(
            `engine: out of KV memory under the non-preempting '${this.queuePolicy.name}' policy (reserve too small)`,
          );
        }
        const victim = this.running.pop();
        if (victim === undefined) throw new Error('engine: out of KV memory with nothing to preempt');
        if (victim.phase === 'decode') need--;
        this.preemptVictim(victim);
        preempted.push(victim.id);
        victims.push(victim);
        const short = need - this.freeTokens();
        if (short > 0) this.evict(short, evictions);
      }
      // Back at the head of the queue, the earliest admitted first (as vLLM's appendleft leaves them).
      if (victims.length > 0) this.requeue(victims.reverse());
    }
    for (const r of this.running) {
      if (r.phase !== 'decode') continue;
      r.kvTokens++;
      r.privateTokens++;
      this.privateTokens++;
      if (r.reserveLeft > 0) {
        r.reserveLeft--;
        this.reservedTokens--;
      }
    }
  }

  /**
   * Step 0 (disaggregation): adopted requests join the batch, in adopt-queue order, each only if its
   * new KV (what the cache lacks of its prompt, plus its generated tokens' KV), its reserve and this
   * iteration's decode growth (its own included; a non-preempting policy's reserves already hold
   * it) fit in free + evictable memory, so that admitting it never preempts. Its prompt is inserted
   * into the cache and pinned; the rest of its KV is private.
   */
  private admitAdopted(now: number, started: EngineStart[], evictions: EngineEviction[]): void {
    const queue = this.adoptQueue;
    const rankOf = this.queuePolicy.priority;
    let bestWaiting = Number.POSITIVE_INFINITY;
    if (rankOf !== undefined) {
      // Swapped-out requests resume in rank order, and only while no waiting request ranks better.
      sortByRank(queue, (r) => rankOf(r, now));
      for (const w of this.waiting) bestWaiting = Math.min(bestWaiting, rankOf(w, now));
    }
    let decodes = 0;
    for (const r of this.running) if (r.phase === 'decode') decodes++;
    let admitted = 0;
    // A policy with its own adopt rule (TetriInfer's reserve policies) sees the decoding requests.
    const rule = this.queuePolicy.admitAdopted;
    const decoding = rule === undefined ? [] : this.running.filter((r) => r.phase === 'decode');
    while (admitted < queue.length && this.running.length < this.maxRunning) {
      const r = queue[admitted]!;
      if (rankOf !== undefined && r.hostTokens > 0 && rankOf(r, now) > bestWaiting) break;
      const prompt = r.prompt;
      const matched = this.cache.match(r.cursor, prompt);
      const pin = this.cache.pinMatch(r.cursor);
      const fresh = r.kvTokens - matched;
      const reserve = this.queuePolicy.reserveTokens(r);
      const growth = this.queuePolicy.preempts ? decodes + 1 : 0;
      const free = this.freeTokens();
      if (fresh + reserve + growth > free + this.cache.evictableTokens - this.reservedTokens) {
        this.cache.unpin(pin);
        break;
      }
      // With nothing decoding the head is admitted whatever the rule says: it fits, and waiting could
      // never free memory (a prediction beyond the capacity would stall the engine).
      if (
        rule !== undefined &&
        decoding.length > 0 &&
        !rule.call(this.queuePolicy, r, decoding, {
          // Its cached prefix is pinned now: what it needs beyond it is what the rule weighs.
          freeKvTokens: free + this.cache.evictableTokens - this.reservedTokens + matched,
          kvCapacityTokens: this.kvCapacityTokens,
        })
      ) {
        this.cache.unpin(pin);
        break;
      }
      const short = fresh - free;
      if (short > 0 && this.evict(short, evictions) < short) {
        throw new Error('engine: an adopted request could not be given memory (internal error)');
      }
      r.pin = matched < prompt.length ? this.cache.extend(pin, prompt, prompt.length) : pin;
      const swappedIn = r.hostTokens > 0;
      if (swappedIn) {
        // Swap-in: what the GPU cache lacks comes back from the host.
        this.swapSeconds += this.host.seconds(fresh);
        this.host.give(r.hostTokens);
        r.hostTokens = 0;
        this.swapInsTotal++;
      }
      r.privateTokens = r.kvTokens - prompt.length;
      this.privateTokens += r.privateTokens;
      r.reserveLeft = reserve;
      this.reservedTokens += reserve;
      // Adopted KV counts as cached; a swapped-in or migrated request keeps its first admission's hit.
      if (!r.started) r.admittedCached = prompt.length;
      r.done = prompt.length;
      r.recomputeLeft = 0;
      r.chunk = 0;
      r.phase = 'decode';
      r.adoptedNow = true;
      this.running.push(r);
      if (rule !== undefined) decoding.push(r);
      decodes++;
      admitted++;
      if (!r.started) {
        r.started = true;
        started.push({ id: r.id, cachedTokens: prompt.length });
      }
    }
    if (admitted > 0) queue.splice(0, admitted);
  }

  /** Step 2: running prefills take their next chunk first. Returns the budget left. */
  private continuePrefills(): number {
    let budget = this.chunkedPrefillTokens;
    for (const r of this.running) {
      if (r.phase !== 'prefill') continue;
      const rest = r.seq.length - r.done + r.recomputeLeft;
      r.chunk = this.enableChunking ? Math.min(rest, Math.max(0, budget)) : rest;
      r.joined = false;
      budget -= r.chunk;
    }
    return budget;
  }

  /** Step 3: admissions, in the policy's order, with the prefill budget left. */
  private admit(
    now: number,
    budget: number,
    started: EngineStart[],
    evictions: EngineEviction[],
    preempted: string[],
  ): void {
    const slots = this.maxRunning - this.running.length;
    if (slots <= 0 || budget < 1) return;
    let ctx: QueueContext = {
      now,
      freeKvTokens: this.admissibleTokens(),
      kvCapacityTokens: this.kvCapacityTokens,
      tokenBudget: budget,
      maxRequests: slots,
      runningRequests: this.running.length,
    };
    if (this.queuePolicy.preemptFor !== undefined && this.preemptForPrompt(ctx, preempted)) {
      ctx = { ...ctx, freeKvTokens: this.admissibleTokens() };
    }
    const free = this.freeTokens();
    const selected = this.queuePolicy.select(this.waiting, ctx);
    if (selected.length === 0) return;

    const admitted = this.admitted;
    admitted.length = 0;
    let need = 0;
    let privateNeed = 0;
    for (const q of selected) {
      const r = this.byId.get(q.id);
      if (r !== q || r.phase !== 'waiting') {
        throw new Error(
          `engine: queue policy '${this.queuePolicy.name}' selected '${q.id}', which is not waiting`,
        );
      }
      if (admitted.length >= slots || budget < 1) break;
      const matched = this.cache.match(r.cursor, r.seq);
      // llama.cpp's slots: a prefix a running request holds cannot serve this one, which computes it
      // again in a slot of its own (its KV is still counted once here).
      const busy = this.exclusivePrefixes && matched > 0 && r.cursor.node.data.refs > 0;
      const pin = this.cache.pinMatch(r.cursor);
      const uncached = r.seq.length - matched;
      const reserve = this.queuePolicy.reserveTokens(r);
      // The policy counted this request's cached prefix as evictable; pinned, it no longer is. The
      // exact check can only stop the selection early, at the first request that does not fit.
      if (need + uncached + reserve > free + this.cache.evictableTokens - this.reservedTokens) {
        this.cache.unpin(pin);
        break;
      }
      need += uncached + reserve;
      privateNeed += uncached;
      r.pin = pin;
      r.admittedCached = busy ? 0 : matched;
      r.recomputeLeft = busy ? matched : 0;
      r.done = matched;
      r.kvTokens = matched;
      r.privateTokens = uncached;
      r.reserveLeft = reserve;
      const cost = Math.max(1, uncached + r.recomputeLeft);
      r.chunk = this.enableChunking ? Math.min(cost, budget) : cost;
      r.joined = true;
      budget -= r.chunk;
      admitted.push(r);
    }
    if (admitted.length === 0) return;

    const short = privateNeed - free;
    if (short > 0 && this.evict(short, evictions) < short) {
      throw new Error('engine: admitted requests could not be given memory (internal error)');
    }
    this.privateTokens += privateNeed;
    this.reservedTokens += need - privateNeed;
    for (const r of admitted) {
      r.phase = 'prefill';
      this.running.push(r);
      if (!r.started) {
        r.started = true;
        started.push({ id: r.id, cachedTokens: Math.min(r.admittedCached, r.prompt.length) });
      }
    }
    // fcfs admits a prefix of the queue: one splice; other orders compact the queue once.
    const w = this.waiting;
    let prefix = 0;
    while (prefix < admitted.length && w[prefix] === admitted[prefix]) prefix++;
    if (prefix === admitted.length) w.splice(0, prefix);
    else this.dropNotWaiting(w);
  }

  /** What admission may allocate: free + evictable - reserves (the policies' `freeKvTokens`). */
  private admissibleTokens(): number {
    return Math.max(0, this.freeTokens() + this.cache.evictableTokens - this.reservedTokens);
  }

  /**
   * Step 3's prompts-first preemption (a policy with `preemptFor`): preempts the plan's victims, in
   * order, by recomputation, until `freeKvTokens` reaches the plan's need, and none when even all of
   * them would not free enough (counting only their private KV and reserves, a lower bound). Victims
   * go back to the head of the waiting queue, the earliest admitted first. Returns whether any was.
   */
  private preemptForPrompt(ctx: QueueContext, preempted: string[]): boolean {
    if (this.role === 'decode') return false;
    const decoding: RequestState[] = [];
    for (const r of this.running) if (r.phase === 'decode') decoding.push(r);
    if (decoding.length === 0) return false;
    const plan = this.queuePolicy.preemptFor!(this.waiting, decoding, ctx);
    if (plan === undefined || ctx.freeKvTokens >= plan.kvTokens) return false;
    const target = this.byId.get(plan.target.id);
    if (target !== plan.target || target.phase !== 'waiting') {
      throw new Error(
        `engine: queue policy '${this.queuePolicy.name}' planned for '${plan.target.id}', which is not waiting`,
      );
    }
    const victims: RequestState[] = [];
    let bound = ctx.freeKvTokens;
    for (const v of plan.victims) {
      const r = this.byId.get(v.id);
      if (r !== v || r.phase !== 'decode') {
        throw new Error(
          `engine: queue policy '${this.queuePolicy.name}' would preempt '${v.id}', which is not decoding`,
        );
      }
      if (bound >= plan.kvTokens) break;
      victims.push(r);
      bound += r.privateTokens + r.reserveLeft;
    }
    if (bound < plan.kvTokens) return false;
    const position = new Map<RequestState, number>();
    for (let i = 0; i < this.running.length; i++) position.set(this.running[i]!, i);
    const done: RequestState[] = [];
    for (const r of victims) {
      if (this.admissibleTokens() >= plan.kvTokens) break;
      this.running.splice(this.running.indexOf(r), 1);
      this.preemptVictim(r);
      preempted.push(r.id);
      done.push(r);
    }
    if (done.length === 0) return false;
    done.sort((a, b) => position.get(a)! - position.get(b)!);
    this.requeue(done);
    return true;
  }

  /** The prompt tokens computed so far join the cache (generated tokens stay private until the finish). */
  private insertPrompt(r: RequestState): void {
    const limit = Math.min(r.done, r.prompt.length);
    const from = r.pin.endLen;
    if (limit <= from) return;
    r.pin = this.cache.extend(r.pin, r.seq, limit);
    r.privateTokens -= limit - from;
    this.privateTokens -= limit - from;
  }

  /** Insert the whole sequence with KV (prompt + output but the last token), unpin, report. */
  private finish(r: RequestState): EngineFinish {
    const kv = r.kvTokens;
    const from = r.pin.endLen;
    if (kv > from) {
      // The prompt is in the cache by now (from >= prompt length): pass only the generated tokens.
      const p = r.prompt.length;
      r.pin = this.cache.extend(r.pin, r.outputs(from - p, kv - p), kv, from);
      r.privateTokens -= kv - from;
      this.privateTokens -= kv - from;
    }
    if (r.privateTokens !== 0)
      throw new Error(`engine: '${r.id}' finished holding private KV (internal error)`);
    this.release(r);
    r.phase = 'gone';
    this.byId.delete(r.id);
    const cachedTokens = Math.min(r.admittedCached, r.prompt.length);
    this.promptTokensTotal += r.prompt.length;
    this.cachedPromptTokensTotal += cachedTokens;
    return { id: r.id, promptTokens: r.prompt.length, cachedTokens, outputTokens: r.outputTokens };
  }

  /** Free a running request's private KV and reserve and release its pin. */
  private release(r: RequestState): void {
    this.privateTokens -= r.privateTokens;
    r.privateTokens = 0;
    this.reservedTokens -= r.reserveLeft;
    r.reserveLeft = 0;
    this.cache.unpin(r.pin);
  }

  /**
   * A prefill-only request's leg ends: it leaves the batch holding its prompt's KV (pinned, the
   * whole prompt in the cache by now) until `releaseKv`; a non-preempting policy's reserve goes.
   */
  private hold(r: RequestState): EngineKvReady {
    if (r.privateTokens !== 0 || r.pin.endLen !== r.prompt.length || r.kvTokens !== r.prompt.length)
      throw new Error(`engine: '${r.id}' ended its prefill with its prompt not cached (internal error)`);
    this.reservedTokens -= r.reserveLeft;
    r.reserveLeft = 0;
    r.phase = 'held';
    this.heldCount++;
    this.heldTokens += r.kvTokens;
    const cachedTokens = Math.min(r.admittedCached, r.prompt.length);
    this.promptTokensTotal += r.prompt.length;
    this.cachedPromptTokensTotal += cachedTokens;
    return {
      id: r.id,
      path: r.prompt,
      kvTokens: r.kvTokens,
      generated: r.generated,
      promptTokens: r.prompt.length,
      cachedTokens,
    };
  }

  /** A held request leaves (released or aborted): its pin goes, its prompt stays cached. */
  private drop(r: RequestState): void {
    this.cache.unpin(r.pin);
    r.pin = this.cache.root;
    this.heldCount--;
    this.heldTokens -= r.kvTokens;
    r.phase = 'gone';
    this.byId.delete(r.id);
    this.stalled = false;
  }

  /**
   * A decode-role engine's preemption: it cannot recompute (no prefill), so the victim's KV is
   * swapped out (leaving GPU memory) and it waits in the adopt queue to be readmitted with it.
   */
  private swapOut(r: RequestState): void {
    if (r.kvTokens > r.prompt.length + r.generated - 1) {
      // Preempted after this iteration's decode growth (a policy's preemptFor): that slot goes unused.
      r.kvTokens--;
      r.privateTokens--;
      this.privateTokens--;
    }
    if (this.host.fits(r.kvTokens)) {
      // Timed and counted against the host pool; a decode-role engine with no room left swaps untimed.
      r.hostTokens = r.kvTokens;
      this.host.take(r.kvTokens);
      this.swapSeconds += this.host.seconds(r.kvTokens);
      this.swapOutsTotal++;
    }
    this.release(r);
    this.preemptionsTotal++;
    r.preemptions++;
    r.preemptedAt = this.cache.now;
    // Its pin (at most its prompt) is a prefix of what it will match again.
    r.cursor.node = r.pin;
    r.cursor.matched = r.pin.endLen;
    r.cursor.version = -1;
    r.pin = this.cache.root;
    r.phase = 'adopting';
    r.chunk = 0;
  }

  /**
   * A request's state from what a client sent: ids, prompt and output counts checked. `query`: only
   * to size it (`kvNeed`), so an id already here (its prefill leg, asked about its decode) is no error.
   */
  private newRequest(request: EngineRequest, now: number, query = false): RequestState {
    if (!query && this.byId.has(request.id))
      throw new Error(`engine: request '${request.id}' is already here`);
    const promptLength = request.tokens.length;
    if (promptLength === 0) throw new Error(`engine: request '${request.id}' has an empty prompt`);
    if (!Number.isInteger(request.outputTokens) || request.outputTokens < 0) {
      throw new Error(`engine: request '${request.id}' outputTokens must be an integer >= 0`);
    }
    const maxTokens = request.maxTokens;
    if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || maxTokens < 1)) {
      throw new Error(`engine: request '${request.id}' maxTokens must be an integer >= 1`);
    }
    let outputs = Math.max(1, Math.min(request.outputTokens, maxTokens ?? Number.POSITIVE_INFINITY));
    if (maxTokens === undefined && !this.queuePolicy.preempts) {
      // No max_tokens: the server's default applies, which for a non-preempting policy is what it
      // reserves (no-preempt's defaultMaxOutputTokens, capped by the context).
      const reserve = this.queuePolicy.reserveTokens({
        id: request.id,
        enqueuedAt: now,
        promptTokens: promptLength,
        cachedTokens: 0,
      });
      outputs = Math.min(outputs, Math.max(1, reserve));
    }
    const state = new RequestState(this.cache, request.id, request.tokens, outputs, maxTokens, now);
    if (request.prediction !== undefined) state.prediction = request.prediction;
    state.outputCeiling = this.kvCapacityTokens - promptLength + 1;
    return state;
  }

  /**
   * S3's supervisor (a policy with `requeueOnOutrun`): requests that outran their prediction, and so
   * the memory reserved for it, are aborted and re-queued at the head, to be recomputed with the
   * revised prediction's reserve; reported as preemptions.
   */
  private requeueOutrun(outrun: RequestState[], preempted: string[]): void {
    for (const r of outrun) {
      this.preempt(r);
      preempted.push(r.id);
    }
    this.waiting.unshift(...outrun);
    this.stalled = false;
  }

  /** Whether outrun requests are re-queued (S3); never on a decode-role engine, which cannot recompute. */
  private requeuesOutrun(): boolean {
    return this.queuePolicy.requeueOnOutrun === true && this.role !== 'decode';
  }

  /** Preemption by recomputation: back to waiting, to prefill its prompt and output so far again. */
  private preempt(r: RequestState): void {
    this.release(r);
    this.preemptionsTotal++;
    r.preemptions++;
    r.preemptedAt = this.cache.now;
    r.seq = r.sequence(r.generated);
    r.promptTokens = r.seq.length;
    r.maxOutputTokens = r.maxTokens === undefined ? undefined : Math.max(0, r.maxTokens - r.generated);
    // What it had pinned is a prefix of the new sequence: resume matching there.
    r.cursor.node = r.pin;
    r.cursor.matched = r.pin.endLen;
    r.cursor.version = -1;
    r.pin = this.cache.root;
    r.phase = 'waiting';
    r.done = 0;
    r.recomputeLeft = 0;
    r.kvTokens = 0;
    r.chunk = 0;
  }

  /** Evict at least `tokens` (and at least `minEvictionTokens` when any), LRU first. Returns the tokens evicted. */
  private evict(tokens: number, out: EngineEviction[]): number {
    return this.cache.evict(Math.max(tokens, this.minEvictionTokens), out);
  }

  private freeTokens(): number {
    return this.kvCapacityTokens - this.cache.tokens - this.privateTokens - this.incomingTokens;
  }

  /**
   * A preempted running request leaves: swapped out to the host pool when it is decoding and fits
   * there (or always, on a decode-role engine, which cannot recompute), else preempted by recomputation.
   */
  private preemptVictim(r: RequestState): void {
    if (this.role === 'decode' || (r.phase === 'decode' && this.host.fits(r.kvTokens))) this.swapOut(r);
    else this.preempt(r);
  }

  /** Preempted requests back at the heads of their queues, in order: swapped ones to the adopt queue. */
  private requeue(victims: readonly RequestState[]): void {
    const swapped = victims.filter((r) => r.phase === 'adopting');
    const recomputed = victims.filter((r) => r.phase === 'waiting');
    if (swapped.length > 0) this.adoptQueue.unshift(...swapped);
    if (recomputed.length > 0) this.waiting.unshift(...recomputed);
  }

  /** Keep the requests still running (finished ones are gone, prefill-only ones held). */
  private dropNotRunning(list: RequestState[]): void {
    let j = 0;
    for (const r of list) if (r.phase === 'prefill' || r.phase === 'decode') list[j++] = r;
    list.length = j;
  }

  private dropNotWaiting(list: RequestState[]): void {
    let j = 0;
    for (const r of list) if (r.phase === 'waiting') list[j++] = r;
    list.length = j;
  }
}

/** Stable sort by rank (lower first), in place: a queue already in order is left as it is. */
function sortByRank(queue: RequestState[], rank: (r: RequestState) => number): void {
  if (queue.length < 2) return;
  const keyed = queue.map((r, i) => ({ r, i, k: rank(r) }));
  keyed.sort((a, b) => a.k - b.k || a.i - b.i);
  for (let i = 0; i < keyed.length; i++) queue[i] = keyed[i]!.r;
}

/**
 * The most output a request may produce, as a server's length check at the door counts it: its
 * max_tokens when the client gave one (vLLM refuses prompt + max_tokens past max_model_len before any
 * work), else its output.
 */
function mostOutput(r: RequestState): number {
  return r.maxTokens === undefined ? r.outputTokens : Math.max(r.outputTokens, r.maxTokens);
}
