/**
 * The window's traffic as a workload the simulator can run: `synthetic:in=...,out=...` with
 * lognormal lengths of the observed mean and spread, clamped to the observed range. Figures are
 * rounded to two significant digits, so that windows alike give the same scenario and the
 * capacity search's cache answers them. Prompts are fresh tokens: cache hits the replicas had
 * (ObservedTraffic.cachedShare) are not modelled, so the capacity is the conservative one.
 */
import { formatLengthDist, type LengthDist } from '../../workloads/length-dist.ts';
import type { LengthStats, ObservedTraffic } from './window.ts';

/** `value` to two significant digits. */
export function twoDigits(value: number): number {
  return value <= 0 ? 0 : Number(value.toPrecision(2));
}

/** A length distribution for the stats: fixed when they do not spread, else a clamped lognormal. */
export function lengthDistOf(stats: LengthStats): LengthDist {
  const mean = Math.max(1, twoDigits(stats.mean));
  const sd = twoDigits(stats.sd);
  if (sd === 0 || stats.min === stats.max) return { kind: 'fixed', value: Math.max(1, Math.round(mean)) };
  const min = Math.max(1, Math.floor(twoDigits(stats.min)));
  const max = Math.max(min, Math.ceil(twoDigits(stats.max)));
  return { kind: 'lognormal', mean, sd, min, max };
}

/** The `--workload` form of a model's observed lengths; undefined before any request finished. */
export function observedWorkload(traffic: ObservedTraffic): string | undefined {
  if (traffic.finished === 0) return undefined;
  return `synthetic:in=${formatLengthDist(lengthDistOf(traffic.prompt))},out=${formatLengthDist(lengthDistOf(traffic.output))}`;
}
