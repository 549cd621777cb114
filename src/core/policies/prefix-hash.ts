import { hashTokens } from '../hash.ts';
import type { InstanceId, RouteDecision, RouteRequest, Tokens } from '../types.ts';
import { withDefaults } from '../with-defaults.ts';
import { BasePolicy, NO_COSTS } from './base-policy.ts';
import { HashRing } from './support/hash-ring.ts';

export interface PrefixHashOptions {
  /** Leading prompt tokens that choose the ring position (SGLang's prefix-token-count). Default 256. */
  readonly prefixTokens?: number;
  /** Ring points per instance; more points even out each instance's share of the ring. Default 100. */
  readonly virtualNodes?: number;
  /** c of bounded loads: no instance takes more than ceil(c x average in-flight). Default 1.25. */
  readonly loadFactor?: number;
  /** Seed of the ring's point hashes and the prompt hash. Default 0. */
  readonly seed?: number;
}

export const prefixHashDefaults: Required<PrefixHashOptions> = {
  prefixTokens: 256,
  virtualNodes: 100,
  loadFactor: 1.25,
  seed: 0,
};

/**
 * Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2018), as SGLang's
 * `prefix_hash`: the hash of the first `prefixTokens` tokens picks a point on a ring of virtual
 * nodes, and the walk clockwise takes the first instance that can accept one more request:
 * in-flight + 1 <= ceil(loadFactor x (in-flight over active instances + 1) / active instances).
 * Some instance always qualifies, and no instance ever exceeds that bound when it accepts.
 * Equal prefixes meet on one instance (its cache) until it is loaded beyond the bound; then they
 * spill to the next instances on the ring, always the same ones. The ring is rebuilt whenever the
 * set of active instances changes (add, drain, remove), which moves only the keys of the instance
 * that came or went.
 */
export class PrefixHashPolicy extends BasePolicy {
  readonly name = 'prefix-hash';
  readonly branches = ['hash'] as const;
  private readonly options: Required<PrefixHashOptions>;
  private readonly ring: HashRing;
  /** The active list the ring was built from: the view replaces it on every membership change. */
  private ringOf: readonly InstanceId[] | null = null;

  constructor(options: PrefixHashOptions = {}) {
    super();
    this.options = withDefaults(prefixHashDefaults, options);
    const o = this.options;
    if (!(Number.isInteger(o.prefixTokens) && o.prefixTokens > 0)) {
      throw new Error(`prefix-hash: prefixTokens must be a positive integer, got ${o.prefixTokens}`);
    }
    if (!(Number.isInteger(o.virtualNodes) && o.virtualNodes > 0)) {
      throw new Error(`prefix-hash: virtualNodes must be a positive integer, got ${o.virtualNodes}`);
    }
    if (!(o.loadFactor >= 1)) throw new Error(`prefix-hash: loadFactor must be >= 1, got ${o.loadFactor}`);
    this.ring = new HashRing(o.virtualNodes, o.seed);
  }

  /** The instance this prompt hashes to, ignoring load (tests, explanations). */
  home(tokens: Tokens): InstanceId {
    const active = this.view.active;
    if (active.length === 0) throw new Error('prefix-hash: no active instance');
    this.syncRing(active);
    return this.ring.ownerAt(
      this.ring.startIndex(hashTokens(tokens, this.options.prefixTokens, this.options.seed)),
      0,
    );
  }

  protected choose(request: RouteRequest, _now: number, active: readonly InstanceId[]): RouteDecision {
    this.syncRing(active);
    let total = 0;
    for (const id of active) total += this.view.inflight(id);
    const bound = Math.ceil((this.options.loadFactor * (total + 1)) / active.length);
    const start = this.ring.startIndex(
      hashTokens(request.tokens, this.options.prefixTokens, this.options.seed),
    );
    let instance = this.ring.ownerAt(start, 0);
    for (let step = 0; step < this.ring.size; step++) {
      const candidate = this.ring.ownerAt(start, step);
      if (this.view.inflight(candidate) + 1 <= bound) {
        instance = candidate;
        break;
      }
    }
    return { instance, branch: 'hash', matchedTokens: 0, costs: NO_COSTS };
  }

  private syncRing(active: readonly InstanceId[]): void {
    if (this.ringOf === active) return;
    this.ring.rebuild(active);
    this.ringOf = active;
  }
}
