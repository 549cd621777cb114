import type { AdoptedKv } from './types.ts';

/**
 * What a live migration (Llumnix, OSDI 24 §4.2) takes off its source engine at the end of its
 * stop-and-copy (`Engine.migrateOut`): the KV the destination adopts (`Engine.adoptMigrated`), and
 * the prompt tokens the source found cached when it admitted the request (its cache hit, which the
 * request keeps wherever it finishes).
 *
 * The protocol, driven by the caller (the simulator: src/sim/migration.ts):
 * 1. the destination sets GPU memory aside for the copy (`reserveIncoming`; none there: abort);
 * 2. rounds: the KV computed so far is copied while the request keeps decoding on the source; each
 *    round copies what the previous round's tokens added, and reserves room for it first;
 * 3. stop-and-copy: the source takes the request out of its batch (`suspend`), the last round's new
 *    tokens are copied, the source frees its KV (`migrateOut`) and the destination adopts it
 *    (`releaseIncoming`, then `adoptMigrated`, ahead of its adopt queue).
 * A request that finishes, or is preempted, on the source before the stop-and-copy aborts the
 * migration (the destination releases its reservation); nothing is lost, nothing runs twice.
 */
export interface MigratedKv extends AdoptedKv {
  readonly cachedTokens: number;
}
