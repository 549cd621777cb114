import { NoInstanceAvailableError } from '../../cluster-view.ts';
import type { InstanceId, RouteDecision, RouteRequest, Tokens } from '../../types.ts';
import { NO_COSTS } from '../base-policy.ts';
import { DecodeAtKvReadyPolicy } from '../support/decode-at-kv-ready.ts';
import { indexAfter } from '../support/index-after.ts';
import { hasRoles, withRole } from '../support/roles.ts';

/** DistServe's router has no options yet. */
export type DistServeOptions = Record<string, never>;

export const distServeDefaults: Required<DistServeOptions> = {};

/**
 * DistServe's runtime dispatch (OSDI'24 §4.3, seed 004; /work/shared/research/seed-distserve-vidur.md),
 * the first disaggregated policy: a request goes to the active prefill instance with the fewest
 * requests in their prefill phase (the shortest prefill queue), and its decode to the active decode
 * instance with the fewest requests in flight, chosen when its KV is ready (`decode: 'at-kv-ready'`).
 *
 * What is modelled: the router counts a request against its prefill instance from `route` until
 * `routeDecode` moves it to the decode instance, so "in its prefill phase" and "in flight on a decode
 * instance" are both the ClusterView's in-flight counts. The prefill instances run FCFS (the
 * registry's `engineQueuePolicy`), their batches filled up to L_m tokens, the prompt-token count past
 * which a prefill is compute bound and batching more stops paying, derived from each prefill
 * instance's cost model (`prefillSaturationTokens`: the shortest prefill whose time per token is within
 * 5% of the lowest; the registry's `prefillBatching`; `--chunk` or an instance's `chunkTokens`
 * overrides it, chunked as usual). The prefill engines do not chunk: prompts join a batch in FCFS
 * order while its total is below L_m, and the one that crosses it runs whole, last in the batch; so a
 * prompt longer than L_m runs alone when it heads the queue (DistServe), but rides with the shorter
 * prompts before it otherwise (ours: the engine's admission stops at the budget, not before a long
 * prompt). Left for later:
 * DistServe's placement search (how many prefill and decode instances, which parallelism), decode
 * instances' batch cap (its L_m for decode: the largest batch) and the pull of KV by the decode instance
 * as its memory frees (the simulator's `pull` transfer mode approximates it).
 * Ties rotate among equals, as in least-load, so an idle fleet is filled in turn.
 */
export class DistServePolicy extends DecodeAtKvReadyPolicy {
  readonly name = 'distserve';
  readonly branches = ['prefill-shortest-queue'] as const;
  private lastPrefill: InstanceId = -1;
  private lastDecode: InstanceId = -1;

  constructor(_options: DistServeOptions = {}) {
    super();
  }

  protected choose(_request: RouteRequest, _now: number, active: readonly InstanceId[]): RouteDecision {
    const prefill = withRole(this.view, active, 'prefill');
    if (prefill.length === 0) {
      throw new Error(
        hasRoles(this.view)
          ? 'distserve: no active prefill instance to take the request'
          : 'distserve: the fleet has no prefill and decode instances; distserve needs a disaggregated fleet (e.g. --fleet 2P1D)',
      );
    }
    const instance = this.view.leastInflight(prefill, indexAfter(prefill, this.lastPrefill));
    this.lastPrefill = instance;
    return {
      instance,
      branch: 'prefill-shortest-queue',
      matchedTokens: 0,
      costs: NO_COSTS,
      decode: 'at-kv-ready',
    };
  }

  protected chooseDecode(
    id: string,
    _prefillInstance: InstanceId,
    _kvTokens: number,
    now: number,
  ): InstanceId {
    const decode = withRole(this.view, this.view.active, 'decode');
    if (decode.length === 0) throw new NoInstanceAvailableError();
    const instance = this.view.leastInflight(decode, indexAfter(decode, this.lastDecode));
    this.lastDecode = instance;
    this.moveRequest(id, instance, now);
    return instance;
  }

  kvReady(_id: string, _prefillInstance: InstanceId, _path: Tokens, _now: number): void {}

  kvArrived(_id: string, _decodeInstance: InstanceId, _path: Tokens, _now: number): void {}
}
