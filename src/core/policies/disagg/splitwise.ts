import { NoInstanceAvailableError } from '../../cluster-view.ts';
import type { TransferMode } from '../../fleet/kv-link.ts';
import type {
  FinishCounts,
  FleetRequest,
  InstanceId,
  Role,
  RouteDecision,
  RouteRequest,
  Tokens,
} from '../../types.ts';
import { BasePolicy, NO_COSTS } from '../base-policy.ts';
import { indexAfter } from '../support/index-after.ts';
import { hasRoles, withRole } from '../support/roles.ts';

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
  /**
   * When the mixed pool is empty or full, borrow a machine of the opposite pool into it (a role change
   * to mixed, asked through `fleetRequests`) and give it back when its colocated work has drained.
   */
  readonly borrow?: boolean;
}

export const splitwiseDefaults: Required<SplitwiseOptions> = {
  promptQueueTokens: 8192,
  tokenQueueTokens: 65536,
  defaultOutputTokens: 129,
  serializedBelowTokens: 512,
  transferBySize: true,
  borrow: true,
};

/** What the router counts for one request in flight. */
interface Pending {
  readonly prompt: InstanceId;
  readonly promptTokens: number;
  /** The token machine (or the mixed instance for a colocated request). */
  readonly token: InstanceId;
  readonly decodeTokens: number;
  /** Runs whole on a mixed (or borrowed) instance. */
  readonly colocated: boolean;
  prefillDone: boolean;
}

const NO_REQUESTS: readonly FleetRequest[] = Object.freeze([]);

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
 * Machine-level schedulers: prompt machines run FCFS (the registry's `engineQueuePolicy`) with a
 * 2,048-token prefill budget per iteration (`engineChunkTokens`; Splitwise caps prompt batches at 2,048
 * tokens); token machines batch whatever their memory admits (the engine's continuous batching;
 * adoptions wait when memory is short); mixed machines (`engineQueuePolicyByRole`) run
 * `splitwise-mixed` under the same budget: new prompts first, preempting the youngest decodes (by
 * recomputation) when memory lacks, a preempted request ahead of new prompts once it waited
 * `agingSeconds` (1 s), at most `maxPreemptions` (1) preemptions per request (§IV: "prompts are scheduled
 * immediately, preempting tokens if capacity is lacking. Tokens gain priority with age, and preemptions
 * per request are capped"; both values are ours). The queue policy is an instance's at its build: a
 * borrowed prompt or token machine keeps FCFS.
 *
 * Borrowing (§IV: "if that is full, it takes an opposite-pool machine into the mixed pool"; `borrow`):
 * when a request overflows and the mixed pool is empty or past a threshold too, the least-loaded machine
 * of the opposite pool (a token machine when the prompt queue overflowed, else a prompt machine; never a
 * pool's last active machine, and only one whose queues with this request stay under both thresholds)
 * joins the mixed pool: the policy counts it as mixed at once, asks the fleet for the role change
 * (`fleetRequests`: `{action: 'role', role: 'mixed'}`; the simulator applies it before dispatching this
 * request), and runs the request there colocated (branch `borrowed`). Later overflow uses it like any
 * mixed machine. When its last colocated request ends, it goes back to its pool (a role change back,
 * which the engine honours once its colocated work is gone; in-flight legs of its own role went on
 * meanwhile). Ours: which machine, the last-machine guard, giving it back at once rather than after
 * lingering (Splitwise re-purposes machines that linger in the mixed pool: not modelled).
 *
 * Not modelled: the coarse re-purposing between pools and the provisioning search (see
 * `preble experiment splitwise` for a small one).
 * Ties rotate among equals, so an idle fleet is filled in turn.
 */
export class SplitwisePolicy extends BasePolicy {
  readonly name = 'splitwise';
  readonly branches = ['prompt-token-pair', 'mixed-pool', 'borrowed'] as const;
  private readonly options: Required<SplitwiseOptions>;
  private readonly pending = new Map<string, Pending>();
  /** Per instance: prompt tokens queued for prefill, decode tokens pending (router's counts). */
  private readonly promptQueue: number[] = [];
  private readonly decodeQueue: number[] = [];
  private lastPrompt: InstanceId = -1;
  private lastToken: InstanceId = -1;
  private lastMixed: InstanceId = -1;
  /** Borrowed machines: their own role, and their colocated requests in flight. */
  private readonly borrowed = new Map<InstanceId, { role: Role; colocated: number }>();
  private requests: FleetRequest[] = [];

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

  protected choose(request: RouteRequest, now: number, active: readonly InstanceId[]): RouteDecision {
    const o = this.options;
    const promptTokens = request.tokens.length;
    const decodeTokens = Math.max(1, request.outputLenHint ?? o.defaultOutputTokens);
    const prompts = withRole(this.view, active, 'prefill');
    const tokens = withRole(this.view, active, 'decode');
    const mixed = withRole(this.view, active, 'mixed');
    if (!hasRoles(this.view))
      throw new Error(
        'splitwise: the fleet has no prefill and decode instances; splitwise needs a disaggregated fleet (e.g. --fleet 2P1D)',
      );
    const mixedPick = (): InstanceId | undefined =>
      mixed.length === 0 ? undefined : this.leastLoaded(mixed);
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
      const fits = (m: InstanceId) =>
        this.promptQueueTokens(m) + promptTokens <= o.promptQueueTokens &&
        this.decodeQueueTokens(m) + decodeTokens <= o.tokenQueueTokens;
      const m = mixedPick();
      if (m !== undefined && fits(m)) return this.colocated(m);
      if (o.borrow) {
        // The mixed pool is empty or full: take a machine of the opposite pool into it.
        const promptFull = this.promptQueueTokens(prompt) + promptTokens > o.promptQueueTokens;
        const pool = promptFull ? tokens : prompts;
        const lender = pool.length < 2 ? undefined : this.leastLoaded(pool);
        if (lender !== undefined && fits(lender)) return this.borrow(lender, now);
      }
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
    const colocated = decision.decode === undefined;
    const token = colocated ? decision.instance : (decision.decode as InstanceId);
    const p: Pending = {
      prompt: decision.instance,
      promptTokens: request.tokens.length,
      token,
      decodeTokens: Math.max(1, request.outputLenHint ?? this.options.defaultOutputTokens),
      colocated,
      prefillDone: false,
    };
    const lent = colocated ? this.borrowed.get(decision.instance) : undefined;
    if (lent !== undefined) lent.colocated++;
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
    const lent = p.colocated ? this.borrowed.get(p.token) : undefined;
    if (lent !== undefined && --lent.colocated === 0) {
      // Its colocated work drained: back to its own pool.
      this.borrowed.delete(p.token);
      this.view.setRole(p.token, lent.role);
      this.requests.push({ action: 'role', instance: p.token, role: lent.role });
    }
  }

  /** Fleet changes asked since the last call: borrowing machines and giving them back. */
  fleetRequests(_now: number): readonly FleetRequest[] {
    if (this.requests.length === 0) return NO_REQUESTS;
    const asked = this.requests;
    this.requests = [];
    return asked;
  }

  /** Machines in the mixed pool that belong to another pool (tests, metrics). */
  borrowedMachines(): InstanceId[] {
    return [...this.borrowed.keys()];
  }

  override instanceRemoved(instance: InstanceId, now: number): void {
    super.instanceRemoved(instance, now);
    this.borrowed.delete(instance);
    this.requests = this.requests.filter((r) => r.instance !== instance);
  }

  /** `lender` joins the mixed pool for this request (asked of the fleet as a role change). */
  private borrow(lender: InstanceId, _now: number): RouteDecision {
    this.borrowed.set(lender, { role: this.view.state(lender)!.info.role ?? 'mixed', colocated: 0 });
    this.view.setRole(lender, 'mixed');
    this.requests.push({ action: 'role', instance: lender, role: 'mixed' });
    this.lastMixed = lender;
    return { instance: lender, branch: 'borrowed', matchedTokens: 0, costs: NO_COSTS };
  }

  /** The instance of `ids` with the least pending work (prompt + decode tokens), ties rotating. */
  private leastLoaded(ids: readonly InstanceId[]): InstanceId {
    const start = indexAfter(ids, this.lastMixed);
    let best = ids[start]!;
    let bestLoad = this.promptQueueTokens(best) + this.decodeQueueTokens(best);
    for (let k = 1; k < ids.length; k++) {
      const id = ids[(start + k) % ids.length]!;
      const load = this.promptQueueTokens(id) + this.decodeQueueTokens(id);
      if (load < bestLoad) {
        best = id;
        bestLoad = load;
      }
    }
    return best;
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
}
