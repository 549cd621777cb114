import { parseGeneratorSpec, workloadNames } from '../registry.ts';
import { isSyntheticForm, parseSyntheticSpec, SYNTHETIC_FORM, type SyntheticSpec } from '../synthetic.ts';
import type { WorkloadRequest } from '../types.ts';
import { azureArrivals, azureRequests } from './azure.ts';
import { BAILIAN_FORMAT, type BlockTraceFormat, MOONCAKE_FORMAT } from './block-trace-format.ts';
import { mooncakeArrivals, mooncakeRequests } from './mooncake.ts';
import { meanRate } from './rate.ts';
import { readTraceText } from './read.ts';
import type { TraceWindow } from './window.ts';

export const traceKinds = ['azure', 'mooncake', 'bailian'] as const;
export type TraceKind = (typeof traceKinds)[number];

/** The block-hash traces' formats, by kind. */
const BLOCK_FORMATS: Record<Exclude<TraceKind, 'azure'>, BlockTraceFormat> = {
  mooncake: MOONCAKE_FORMAT,
  bailian: BAILIAN_FORMAT,
};

export interface TraceSpec {
  readonly kind: TraceKind;
  readonly path: string;
}

/** What a `--workload` value names: a trace file, a built-in generator, or synthetic lengths. */
export type WorkloadSpec =
  | TraceSpec
  | { readonly kind: 'generator'; readonly name: string }
  | { readonly kind: 'synthetic'; readonly form: string; readonly lengths: SyntheticSpec };

/**
 * Parses `azure:FILE`, `mooncake:FILE`, `bailian:FILE`, `synthetic:in=LENGTH,out=LENGTH` or a generator name (with
 * its `NAME:KEY=VALUE,...` options);
 * throws listing the valid forms, or naming the bad part of a synthetic form.
 */
export function parseWorkloadSpec(spec: string): WorkloadSpec {
  if (isSyntheticForm(spec)) return { kind: 'synthetic', form: spec, lengths: parseSyntheticSpec(spec) };
  const colon = spec.indexOf(':');
  const prefix = colon === -1 ? '' : spec.slice(0, colon);
  if ((traceKinds as readonly string[]).includes(prefix)) {
    const path = spec.slice(colon + 1);
    if (path === '') throw new Error(`workload '${spec}' names no file; expected ${prefix}:FILE`);
    return { kind: prefix as TraceKind, path };
  }
  if (parseGeneratorSpec(spec) !== undefined) return { kind: 'generator', name: spec };
  const forms = [...workloadNames, SYNTHETIC_FORM, ...traceKinds.map((kind) => `${kind}:FILE`)];
  throw new Error(`unknown workload '${spec}'; valid forms: ${forms.join(', ')}`);
}

export interface TraceReplayOptions {
  readonly seed: number;
  /** At most this many requests. */
  readonly requests?: number;
  /** Skip this many rows first. */
  readonly offset?: number;
  /**
   * Re-time the window so that its mean rate (see `meanRate`) is this many requests per second;
   * without it the trace keeps its own timing.
   */
  readonly rps?: number;
}

/** A trace file's request stream (read once, parsed lazily on each iteration). */
export function traceRequests(trace: TraceSpec, options: TraceReplayOptions): Iterable<WorkloadRequest> {
  const text = readTraceText(trace.path);
  const window = { limit: options.requests, offset: options.offset };
  const scale = options.rps === undefined ? 1 : scaleToRate(trace, text, window, options.rps);
  const replay = { ...window, seed: options.seed, scale };
  return trace.kind === 'azure'
    ? azureRequests(text, replay)
    : mooncakeRequests(text, replay, BLOCK_FORMATS[trace.kind]);
}

/** A trace file's arrival times (for `withArrivals`), optionally re-timed to a mean rate. */
export function traceArrivals(
  trace: TraceSpec,
  window: TraceWindow & { readonly rps?: number } = {},
): number[] {
  const text = readTraceText(trace.path);
  const scale = window.rps === undefined ? (window.scale ?? 1) : scaleToRate(trace, text, window, window.rps);
  return arrivalsOf(trace.kind, text, { ...window, scale });
}

function scaleToRate(trace: TraceSpec, text: string, window: TraceWindow, rps: number): number {
  if (!(rps > 0) || !Number.isFinite(rps)) throw new Error(`rps must be a positive number, got ${rps}`);
  const arrivals = arrivalsOf(trace.kind, text, { ...window, scale: 1 });
  const rate = meanRate(arrivals);
  if (Number.isNaN(rate)) {
    const why = arrivals.length === 0 ? 'it has no rows' : 'its window spans no time';
    throw new Error(`cannot re-time ${trace.kind}:${trace.path} to ${rps} req/s: ${why}`);
  }
  return rps / rate;
}

function arrivalsOf(kind: TraceKind, text: string, window: TraceWindow): number[] {
  return kind === 'azure' ? azureArrivals(text, window) : mooncakeArrivals(text, window, BLOCK_FORMATS[kind]);
}
