import { NoInstanceAvailableError } from '../../cluster-view.ts';
import type { TransferMode } from '../../fleet/kv-link.ts';
import type { FinishCounts, InstanceId, Role, RouteDecision, RouteRequest, Tokens } from '../../types.ts';
import { BasePolicy, NO_COSTS } from '../base-policy.ts';
import { indexAfter } from '../support/index-after.ts';

export interface SplitwiseOptions {
  /**
   * A prompt machine whose queued prompt tokens (with this request's) pass this sends the request to the
   * mixed pool. Splitwise gives no value; ours is 4 prompt batches of the 2,048-token cap: past it a prompt
   * waits behind about four batch times.
   */
  readonly promptQueueTokens?: number;
  /**
   * A token machine whose pending decode tokens (with this request's) pass this sends the request to the
   * mixed pool. Splitwise gives no value; ours is 64 Ki tokens, e.g. 512 requests of 128 tokens to go.
   */
  readonly tokenQueueTokens?: number;
  /** Expected output tokens of a request without a max_tokens hint (Splitwise's conversation median: 129). */
  readonly defaultOutputTokens?: number;
  /** Prompts shorter than this move their KV serialized, longer ones layer-wise (Splitwise §IV-C, H100: 512). */
  readonly serializedBelowTokens?: number;
  /** Pick the transfer mode per request by `serializedBelowTokens`; false leaves the fleet's mode. */
  readonly transferBySize?: boolean;
}

export const splitwiseDefaults: Required<SplitwiseOptions> = {
  promptQueueTokens: 8192,
  tokenQueueTokens: 65536,
  defaultOutputTokens: 129,
  serializedBelowTokens: 512,
  transferBySize: true,
};

/** What the router counts for one request in flight. */
interface Pending {
  readonly prompt: InstanceId;
  readonly promptTokens: number;
  /** The token machine (or the mixed instance for a colocated request). */
  readonly token: InstanceId;
  readonly decodeTokens: number;
  prefillDone: boolean;
}

/**
 * Splitwise's cluster-level scheduler (ISCA'24 §IV, seed 004; /work/shared/research/
 * seed-aladdin-splitwise-tetriinfer.md), a first slice. Three pools: prompt machines (prefill role),
 * token machines (decode role) and the mixed pool (mixed role, where the fleet has one). At arrival the
 * (prompt, token) pair is chosen together by join-the-shortest-queue on pending tokens, so `decode` is set
 * in the decision (the KV transfer can overlap the prompt):
 * - a prompt machine's queue is the prompt tokens routed to it whose prefill has not ended (its first
 *   token), as the router counts them;
 * - a token machine's queue is its pending decode work: the requests routed to it, from their route to
 *   their finish, times their expected output (max_tokens when the client gave it, else
 *   `defaultOutputTokens`). The whole expected output counts until the finish: the contract gives no
 *   per-token progress, so "remaining" is not decremented as tokens are generated.
 * When the chosen prompt machine's queue would pass `promptQueueTokens`, or the token machine's
 * `tokenQueueTokens`, or the token machine's polled free KV cannot hold the request (Splitwise: token
 * machines queue near OOM), the request runs colocated on the least-loaded mixed instance (by the same
 * two queues, summed), unless that one is past a threshold too. With no active prompt or token machine,
 * requests go to the mixed pool.
 *
 * Transfer: serialized below `serializedBelowTokens` prompt tokens, layer-wise above (`transferMode`).
 *
 * Machine-level schedulers: prompt and mixed machines run FCFS (the registry's `engineQueuePolicy`) with
 * a 2,048-token prefill budget per iteration (`engineChunkTokens`; Splitwise caps prompt batches at
 * 2,048 tokens); token machines batch whatever their memory admits (the engine's continuous batching;
 * adoptions wait when memory is short). Not modelled: the mixed machines' prompts-first priority with
 * aging of token work and the per-request preemption cap (the engine's FCFS chunked prefill mixes them
 * instead); borrowing a prompt or token machine into the mixed pool when it is full, and giving it back
 * (role changes at run time: later work); the coarse re-purposing between pools and the provisioning
 * search.
 * Ties rotate among equals, so an idle fleet is filled in turn.
 */
export class SplitwisePolicy extends BasePolicy {
  readonly name = 'splitwise';
  readonly branches = ['prompt-token-pair', 'mixed-pool'] as const;
  private readonly options: Required<SplitwiseOptions>;
  private readonly pending = new Map<string, Pending>();
  /** Per instance: prompt tokens queued for prefill, decode tokens pending (router's counts). */
  private readonly promptQueue: number[] = [];
  private readonly decodeQueue: number[] = [];
  private lastPrompt: InstanceId = -1;
  private lastToken: InstanceId = -1;
  private lastMixed: InstanceId = -1;

  constructor(options: SplitwiseOptions = {}) {
    super();
    this.options = { ...splitwiseDefaults, ...options };
  }

  /** Queued prompt tokens of an instance, as the router counts them (tests, metrics). */
  promptQueueTokens(instance: InstanceId): number {
    return this.promptQueue[instance] ?? 0;
  }

  /** Pending decode tokens of an instance, as the router counts them (tests, metrics). */
  decodeQueueTokens(instance: InstanceId): number {
    return this.decodeQueue[instance] ?? 0;
  }

  protected choose(request: RouteRequest, _now: number, active: readonly InstanceId[]): RouteDecision {
    const o = this.options;
    const promptTokens = request.tokens.length;
    const decodeTokens = Math.max(1, request.outputLenHint ?? o.defaultOutputTokens);
    const prompts = this.withRole(active, 'prefill');
    const tokens = this.withRole(active, 'decode');
    const mixed = this.withRole(active, 'mixed');
    if (!this.hasRoles())
      throw new Error(
        'splitwise: the fleet has no prefill and decode instances; splitwise needs a disaggregated fleet (e.g. --fleet 2P1D)',
      );
    const mixedPick = (): InstanceId | undefined => {
      if (mixed.length === 0) return undefined;
      const start = indexAfter(mixed, this.lastMixed);
      let best: InstanceId | undefined;
      let bestLoad = Number.POSITIVE_INFINITY;
      for (let k = 0; k < mixed.length; k++) {
        const id = mixed[(start + k) % mixed.length]!;
        const load = this.promptQueueTokens(id) + this.decodeQueueTokens(id);
        if (load < bestLoad) {
          best = id;
          bestLoad = load;
        }
      }
      return best;
    };
    if (prompts.length === 0 || tokens.length === 0) {
      const m = mixedPick();
      if (m === undefined) throw new NoInstanceAvailableError();
      return this.colocated(m);
    }
    const prompt = this.shortest(prompts, this.promptQueue, this.lastPrompt);
    const token = this.shortest(tokens, this.decodeQueue, this.lastToken);
    const overflow =
      this.promptQueueTokens(prompt) + promptTokens > o.promptQueueTokens ||
      this.decodeQueueTokens(token) + decodeTokens > o.tokenQueueTokens ||
      this.shortOfMemory(token, promptTokens + decodeTokens);
    if (overflow) {
      const m = mixedPick();
      if (
        m !== undefined &&
        this.promptQueueTokens(m) + promptTokens <= o.promptQueueTokens &&
        this.decodeQueueTokens(m) + decodeTokens <= o.tokenQueueTokens
      )
        return this.colocated(m);
    }
    this.lastPrompt = prompt;
    this.lastToken = token;
    const transferMode: TransferMode | undefined = o.transferBySize
      ? promptTokens < o.serializedBelowTokens
        ? 'serialized'
        : 'layer-wise'
      : undefined;
    return {
      instance: prompt,
      branch: 'prompt-token-pair',
      matchedTokens: 0,
      costs: NO_COSTS,
      decode: token,
      ...(transferMode === undefined ? {} : { transferMode }),
    };
  }

  protected override onRouted(request: RouteRequest, decision: RouteDecision, _now: number): void {
    const token = decision.decode === undefined ? decision.instance : (decision.decode as InstanceId);
    const p: Pending = {
      prompt: decision.instance,
      promptTokens: request.tokens.length,
      token,
      decodeTokens: Math.max(1, request.outputLenHint ?? this.options.defaultOutputTokens),
      prefillDone: false,
    };
    this.pending.set(request.id, p);
    this.add(this.promptQueue, p.prompt, p.promptTokens);
    this.add(this.decodeQueue, p.token, p.decodeTokens);
  }

  override requestFirstToken(id: string, _now: number): void {
    this.prefillEnded(id);
  }

  kvReady(id: string, _prefillInstance: InstanceId, _path: Tokens, now: number): void {
    this.prefillEnded(id);
    const p = this.pending.get(id);
    if (p !== undefined) this.moveRequest(id, p.token, now);
  }

  kvArrived(_id: string, _decodeInstance: InstanceId, _path: Tokens, _now: number): void {}

  protected override onReleased(
    id: string,
    _instance: InstanceId,
    _now: number,
    _counts: FinishCounts | undefined,
  ): void {
    this.prefillEnded(id);
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    this.add(this.decodeQueue, p.token, -p.decodeTokens);
  }

  private prefillEnded(id: string): void {
    const p = this.pending.get(id);
    if (p === undefined || p.prefillDone) return;
    p.prefillDone = true;
    this.add(this.promptQueue, p.prompt, -p.promptTokens);
  }

  private colocated(instance: InstanceId): RouteDecision {
    this.lastMixed = instance;
    return { instance, branch: 'mixed-pool', matchedTokens: 0, costs: NO_COSTS };
  }

  /** The instance of `ids` with the smallest queue, ties rotating after `last`. */
  private shortest(ids: readonly InstanceId[], queue: readonly number[], last: InstanceId): InstanceId {
    const start = indexAfter(ids, last);
    let best = ids[start]!;
    for (let k = 1; k < ids.length; k++) {
      const id = ids[(start + k) % ids.length]!;
      if ((queue[id] ?? 0) < (queue[best] ?? 0)) best = id;
    }
    return best;
  }

  /** The token machine's last polled free KV cannot hold the request (no poll yet: it can). */
  private shortOfMemory(instance: InstanceId, kvTokens: number): boolean {
    const signal = this.view.state(instance)?.signal;
    return signal !== undefined && signal.freeKvTokens < kvTokens;
  }

  private add(queue: number[], instance: InstanceId, tokens: number): void {
    queue[instance] = (queue[instance] ?? 0) + tokens;
  }

  private withRole(ids: readonly InstanceId[], role: Role): InstanceId[] {
    return ids.filter((id) => (this.view.state(id)?.info.role ?? 'mixed') === role);
  }

  private hasRoles(): boolean {
    for (const s of this.view.known()) if (s.info.role === 'prefill' || s.info.role === 'decode') return true;
    return false;
  }
}
