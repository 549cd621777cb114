import type { Random } from '../../../random.ts';
import type { InstanceId } from '../../../types.ts';
import type { DecodeDispatch } from './options.ts';

/** One decode instance as the last load broadcast described it (TetriInfer §3.2). */
export interface DecodeLoad {
  readonly instance: InstanceId;
  /** KV capacity in tokens. */
  readonly capacityTokens: number;
  /** KV its requests will need by the predictions: each one's prompt plus predicted output. */
  readonly demandTokens: number;
  /** Requests decoding or bound there, heavy (predicted past the threshold) and light. */
  readonly heavy: number;
  readonly light: number;
}

/** The request being dispatched: its predicted KV need and its class. */
export interface DispatchNeed {
  readonly tokens: number;
  readonly heavy: boolean;
}

/**
 * α: the instances with room for the request's predicted need on top of theirs; β: the rest (§3.3.4
 * step 1). Both keep the order of `loads`.
 */
export function splitByResources(
  loads: readonly DecodeLoad[],
  need: DispatchNeed,
): { alpha: DecodeLoad[]; beta: DecodeLoad[] } {
  const alpha: DecodeLoad[] = [];
  const beta: DecodeLoad[] = [];
  for (const l of loads) (l.demandTokens + need.tokens <= l.capacityTokens ? alpha : beta).push(l);
  return { alpha, beta };
}

/** The instance's heavy:light decode ratio with the request added (a light count of 0 counts as 1). */
export function heavyLightRatio(load: DecodeLoad, need: DispatchNeed): number {
  const heavy = load.heavy + (need.heavy ? 1 : 0);
  const light = load.light + (need.heavy ? 0 : 1);
  return heavy / Math.max(1, light);
}

/**
 * The decode instance for one request (§3.3.4), `loads` non-empty and in id order:
 * - `power-of-two` (the paper's): two distinct instances at random from α and the one with the lower
 *   heavy:light ratio once the request joins (ties: the lower predicted demand, then the first pick).
 *   With α empty the paper says nothing; ours: the same over all instances (β), the least overloaded
 *   choice we can make without the request waiting.
 * - `random` (Figure 19's baseline): any instance, uniformly.
 * - `imbalance` (Figure 19's worst case): every heavy decode to the first instance, light ones at random.
 */
export function dispatchDecode(
  loads: readonly DecodeLoad[],
  need: DispatchNeed,
  mode: DecodeDispatch,
  random: Random,
): InstanceId {
  if (loads.length === 0) throw new Error('tetriinfer: no decode instance to dispatch to');
  if (mode === 'random') return random.pick(loads).instance;
  if (mode === 'imbalance') return need.heavy ? loads[0]!.instance : random.pick(loads).instance;
  const { alpha } = splitByResources(loads, need);
  const pool = alpha.length > 0 ? alpha : loads;
  if (pool.length === 1) return pool[0]!.instance;
  const i = random.int(0, pool.length - 1);
  let j = random.int(0, pool.length - 2);
  if (j >= i) j++;
  const a = pool[i]!;
  const b = pool[j]!;
  const ra = heavyLightRatio(a, need);
  const rb = heavyLightRatio(b, need);
  const takeB = rb < ra || (rb === ra && b.demandTokens < a.demandTokens);
  return takeB ? b.instance : a.instance;
}
