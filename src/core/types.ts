/**
 * Shared vocabulary of the scheduling core. Pure types: no I/O, no clocks.
 * All times are in seconds; token sequences are typed arrays, never arrays of objects.
 */

import type { CostModel } from './cost-model/types.ts';
import type { TransferMode } from './fleet/kv-link.ts';

/** Token ids of a prompt. */
export type Tokens = Uint32Array;

/** Instances (replicas, model instances) are identified by small non-negative integers. */
export type InstanceId = number;

/** What a global policy is told about a request when it routes it. */
export interface RouteRequest {
  readonly id: string;
  readonly tokens: Tokens;
  /** Arrival time (seconds, on whatever clock the caller uses). */
  readonly arrival: number;
  /** Expected output length, when the client gave one (max_tokens) or a workload knows it. */
  readonly outputLenHint?: number;
  /** A length predictor's guess at the output length (core/length), when the caller runs one. */
  readonly predictedOutputTokens?: number;
  readonly tenant?: string;
  readonly sessionId?: string;
  /**
   * Instances this request must not go to (a retry after they failed it). They are treated as
   * draining for this decision only; if nothing else is left, `route` throws NoInstanceAvailableError.
   */
  readonly avoid?: readonly InstanceId[];
  /**
   * This request's own SLO in seconds (first token; time per output token, read by Aladdin as its
   * ATGT), when it has one; SLO-aware policies (aladdin) otherwise use the run's.
   */
  readonly slo?: { readonly ttft: number; readonly tpot: number };
}

/**
 * One instance's cost as a policy compared it. Only the total and the matched tokens are shared;
 * a policy with a cost of several parts declares its own type extending this one (E2's L, M and P:
 * `E2InstanceCost`), so the contract names no policy's parts.
 */
export interface InstanceCost {
  readonly instance: InstanceId;
  readonly total: number;
  /** Tokens of this prompt already cached on the instance, as the policy believes. */
  readonly matchedTokens?: number;
}

export interface RouteDecision<C extends InstanceCost = InstanceCost> {
  readonly instance: InstanceId;
  /** Why the policy chose it: one of the names the policy declares in `branches`. */
  readonly branch: string;
  /** Prompt tokens the policy expects to be served from the chosen instance's cache. */
  readonly matchedTokens: number;
  /** The costs compared, for explanations and metrics (may be empty for cost-free policies). */
  readonly costs: readonly C[];
  /**
   * Prefill/decode disaggregation: present, `instance` is the prefill instance and the request's
   * decode runs elsewhere: on this instance, or on the one `routeDecode` picks when its KV is ready
   * ('at-kv-ready'). Absent (every colocated policy), the request runs whole on `instance`.
   */
  readonly decode?: InstanceId | 'at-kv-ready';
  /**
   * Disaggregation only: how this request's KV moves (core/fleet/kv-link.ts), overriding the fleet's
   * transfer mode (Splitwise picks serialized or layer-wise by prompt length). Absent: the fleet's.
   */
  readonly transferMode?: TransferMode;
}

/** Token counts an engine reports when a request finishes. */
export interface FinishCounts {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly outputTokens: number;
}

/**
 * What an instance does in a fleet: `mixed` runs whole requests (prefill and decode, colocated);
 * `prefill` runs prompts to their first token and hands the KV on; `decode` adopts requests whose KV
 * arrives and generates their tokens (prefill/decode disaggregation: DistServe, Splitwise).
 */
export type Role = 'mixed' | 'prefill' | 'decode';

/** Which part of a request's journey runs on one instance: all of it, or one of its two legs. */
export type LegKind = 'whole' | 'prefill' | 'decode';

/** What an instance is when it joins the policy's view. */
export interface InstanceInfo {
  /** KV-cache capacity in tokens (from the cost model or the engine); Infinity when unknown. */
  readonly kvCapacityTokens: number;
  /** Maximum prefill tokens per iteration (chunk budget), when known. */
  readonly maxBatchedTokens?: number;
  /**
   * A cached prefix serves one request at a time (llama.cpp's slots): while a request that went
   * through it runs there, a new one cannot share it and recomputes it in another slot. Paged
   * engines (vLLM, SGLang, the emulated engine) share cached blocks between running requests.
   */
  readonly exclusivePrefixes?: boolean;
  /** The instance's role; absent means `mixed` (every colocated fleet). */
  readonly role?: Role;
  /**
   * The instance's own prefill and decode times, when known (the simulator knows each instance's
   * hardware; the gateway, a replica's configured `costModel`): in a fleet of mixed GPUs a policy that
   * prices time prices each instance with its own. Absent: the policy's cost model.
   */
  readonly costModel?: CostModel;
}

/**
 * A change to the fleet that a policy asks for (`GlobalPolicy.fleetRequests`; Splitwise borrows a
 * prompt or token machine into its mixed pool and gives it back). The simulator applies it at once, as
 * it applies a scheduled fleet action (docs/fleets.md): `drain` stops new work, in-flight work finishes;
 * `remove` drains, then removes the instance once it is idle; `role` changes what the instance runs.
 * Adding an instance needs its hardware, which a policy does not know: only a fleet action adds.
 */
export type FleetRequest =
  | { readonly action: 'drain' | 'remove'; readonly instance: InstanceId }
  | { readonly action: 'role'; readonly instance: InstanceId; readonly role: Role };

/**
 * A live migration a policy asks for (`GlobalPolicy.migrations`; Llumnix): move the running request
 * `id`, decoding on `from`, to `to`, its KV copied in rounds while it keeps decoding, then a short
 * stop-and-copy (docs/fleets.md, "Live migration").
 */
export interface MigrationRequest {
  readonly id: string;
  readonly from: InstanceId;
  readonly to: InstanceId;
  /**
   * A queued move instead (Aladdin's re-balancing): `id` waits on `from` and was never admitted, so it
   * has no KV; it leaves that queue and joins the tail of `to`'s at once, nothing copied. Refused
   * (`aborted`) once it started, or when `to` is not an active mixed instance.
   */
  readonly queued?: boolean;
}

/**
 * How a migration ended: `done` (the request decodes on `to` now) or `aborted` (it stayed on `from`, or
 * finished there): refused (not decoding on `from`, `to` cannot take it), no memory on `to`, or the
 * request finished or was preempted on `from` before the stop-and-copy.
 */
export type MigrationOutcome = 'done' | 'aborted';

/** Load signals polled from an instance (engine /metrics or the simulator), for load-based policies. */
export interface InstanceLoadSignal {
  readonly running: number;
  readonly waiting: number;
  /** Prompt tokens queued for prefill (not yet computed). */
  readonly queuedPrefillTokens: number;
  /** KV tokens in use and free. */
  readonly usedKvTokens: number;
  readonly freeKvTokens: number;
}

/**
 * The global policy contract (docs/design.md). The simulator and the gateway drive every policy
 * through exactly these calls, in this order for one request:
 *   route -> requestStarted -> requestFirstToken -> requestFinished | requestFailed.
 * The caller counts the request against its instance before dispatch: `route` itself records it
 * as in flight on the chosen instance, and `requestFinished`/`requestFailed` release it.
 *
 * A disaggregated request (a decision with `decode`) runs its prefill on `instance` and its decode on
 * a decode instance, and its calls are, in this order:
 *   route -> requestStarted (prefill admitted) -> requestFirstToken (prefill end) -> kvReady
 *   [-> routeDecode, for 'at-kv-ready'] -> kvArrived -> requestFinished | requestFailed.
 * It is counted against the prefill instance from `route` and moved to the decode instance when the
 * policy commits to it (in `routeDecode`, or in `kvReady` for a decode named at route; BasePolicy's
 * `moveRequest`), and released exactly once. A request that ends at its prefill (one output token)
 * has no kvReady: route -> requestStarted -> requestFirstToken -> requestFinished.
 */
export interface GlobalPolicy {
  readonly name: string;
  /** Every branch name `route` may return, so metrics and reports can list them before they occur. */
  readonly branches: readonly string[];
  route(request: RouteRequest, now: number): RouteDecision;
  /** The engine admitted the request into a batch (queueing ends). */
  requestStarted(id: string, now: number): void;
  requestFirstToken(id: string, now: number): void;
  requestFinished(id: string, now: number, counts: FinishCounts): void;
  /** The request ended without finishing (error, abort, instance failure). */
  requestFailed(id: string, now: number): void;
  /**
   * The instance evicted cached tokens: `path` is the token sequence from the root whose suffix
   * `path[keptTokens..]` (and everything below it) is no longer cached there. `evictedAt` is when
   * the engine evicted, when the report comes later than that (the simulator reports at the end of
   * the iteration whose start evicted); absent, it is `now`. A prefix that a request routed after
   * `evictedAt` goes through, or that an in-flight request still needs, will be cached again by
   * the engine: policies ignore the report for it.
   */
  instanceEvicted(
    instance: InstanceId,
    path: Tokens,
    keptTokens: number,
    now: number,
    evictedAt?: number,
  ): void;
  instanceAdded(instance: InstanceId, info: InstanceInfo, now: number): void;
  /** No new requests go to a draining instance; its in-flight ones finish normally. */
  instanceDrained(instance: InstanceId, now: number): void;
  /** The instance left (removed or failed): its cached prefixes are forgotten. */
  instanceRemoved(instance: InstanceId, now: number): void;
  /**
   * The instance's role changed at run time (a fleet action, or the policy's own request): from now on
   * it takes work of `role`; work it already has of its old role finishes there. BasePolicy records it
   * in the ClusterView (`InstanceInfo.role`).
   */
  instanceRoleChanged?(instance: InstanceId, role: Role, now: number): void;
  /**
   * Fleet changes the policy asks for, taken (the list is emptied) by the caller right after each
   * `route` and after every event it delivers; the caller applies them and reports them back through the
   * usual calls (`instanceRoleChanged`, `instanceDrained`, `instanceEvicted`, `instanceRemoved`).
   */
  fleetRequests?(now: number): readonly FleetRequest[];
  /**
   * Live migrations the policy asks for, polled (the list is taken) after every event the caller
   * delivers, as `fleetRequests`; each ends in `migrationEnded`. Only the simulator migrates.
   */
  migrations?(now: number): readonly MigrationRequest[];
  /** A migration ended; on `done`, the request is counted against `to` from now on (BasePolicy moves it). */
  migrationEnded?(id: string, from: InstanceId, to: InstanceId, outcome: MigrationOutcome, now: number): void;
  /**
   * How many workers the policy's own packing uses now, counting those it would open (Aladdin's best
   * fit): what a Provisioner (src/core/provisioning) sizes the fleet from. Absent: it does not say.
   */
  workersWanted?(now: number): number;
  /** Fresh load signals for one instance (polled metrics). Policies that do not need them ignore it. */
  loadSignal(instance: InstanceId, signal: InstanceLoadSignal, now: number): void;
  /** Periodic background work: window expiry, rebalancing, prefix replication. */
  tick(now: number): void;
  /**
   * Disaggregation: the decode instance of a request routed with `decode: 'at-kv-ready'`, asked when
   * its prefill on `prefillInstance` ended with `kvTokens` of KV to move (after `kvReady`). `avoid`:
   * instances not to pick (a retry after they refused the request as too long for their KV).
   */
  routeDecode?(
    id: string,
    prefillInstance: InstanceId,
    kvTokens: number,
    now: number,
    avoid?: readonly InstanceId[],
  ): InstanceId;
  /** Disaggregation: the prefill leg ended; the KV of `path` is held on `prefillInstance`. */
  kvReady?(id: string, prefillInstance: InstanceId, path: Tokens, now: number): void;
  /** Disaggregation: the KV of `path` arrived on `decodeInstance`, which takes the request over. */
  kvArrived?(id: string, decodeInstance: InstanceId, path: Tokens, now: number): void;
}
