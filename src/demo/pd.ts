/**
 * `preble demo --pd`: colocated and disaggregated configurations on the same number of emulated GPUs,
 * and the verdict (the simulator's prediction: src/cli/demo-pd-sim.ts) on TTFT and TPOT.
 */
import { buildFleet, parseFleetShorthand } from '../core/fleet/index.ts';
import { isDisaggregatedPolicyName, parsePolicyList, policyEntry } from '../core/policies/registry.ts';
import type { DemoConfiguration, DemoResult } from './demo.ts';

/**
 * The `--pd` stream: long shared documents (prefix-pd's cache has something to keep) with unique
 * questions and long answers, so prefills are long enough to stall colocated decodes.
 */
export const PD_STREAM = { prefixes: 32, prefixChars: 3000, suffixChars: 200, outputTokens: 200 } as const;

/**
 * `POLICY@FLEET` items (`distserve@2P2D`; `--fleet` shorthand) to configurations; a bare policy runs
 * on `replicas` mixed replicas. A colocated policy on prefill/decode replicas, or a disaggregated one
 * without both, is refused in one line (as the gateway would).
 */
export function parsePdConfigurations(list: string, replicas: number, model: string): DemoConfiguration[] {
  return list
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item.length > 0)
    .map((item) => {
      const [policyText, fleetText = `${replicas}M`, extra] = item.split('@');
      if (extra !== undefined || policyText === undefined || policyText.length === 0)
        throw new Error(`--policy: expected POLICY@FLEET, e.g. distserve@2P2D; got '${item}'`);
      const [policy] = parsePolicyList(policyText);
      let roles: DemoConfiguration['roles'];
      try {
        roles = buildFleet(parseFleetShorthand(fleetText, model)).instances.map((i) => i.role);
      } catch (error) {
        throw new Error(`--policy ${item}: ${(error as Error).message}`);
      }
      const split = roles.some((r) => r !== 'mixed');
      if (isDisaggregatedPolicyName(policy!) !== split)
        throw new Error(
          split
            ? `--policy ${item}: ${policy} is colocated; prefill/decode fleets need a disaggregated policy (distserve, splitwise, prefix-pd)`
            : `--policy ${item}: ${policy} is disaggregated; give it a fleet with prefill and decode replicas, e.g. ${policy}@2P2D`,
        );
      return {
        name: `${policy}@${fleetText.toUpperCase()}`,
        policy: policy!,
        fleet: fleetText.toUpperCase(),
        roles,
        // As the simulator's 'auto' (sim/run.ts resolveQueuePolicy), so the prediction runs the same queues.
        queuePolicy: policyEntry(policy!).engineQueuePolicy ?? 'lpm',
      };
    });
}

/** One configuration over its runs, in the verdict. */
export interface PdSummary {
  readonly configuration: string;
  readonly ttft: number;
  readonly tpot: number;
  readonly latency: number;
  readonly disaggregatedShare: number;
  readonly transferShareOfTtft: number;
  /** Waiting before admission on the mixed replicas (prefill-role engines do not report it). */
  readonly prefillQueueSeconds: number | undefined;
  /** The prefill leg of disaggregated requests (queue and prompt on the prefill replica). */
  readonly prefillLegSeconds: number | undefined;
  /** Absent when no run's engines counted their prefix-cache lookups (real llama.cpp replicas). */
  readonly prefillCachedShare: number | undefined;
}

/** What the verdict needs of one run (a DemoResult has these fields). */
export type PdRunFigures = Pick<
  DemoResult,
  'policy' | 'configuration' | 'ttft' | 'tpot' | 'latency' | 'completed' | 'cacheHitRate' | 'pd'
>;

export interface PdVerdict {
  readonly summaries: readonly PdSummary[];
  readonly ttftWinner: string;
  readonly tpotWinner: string;
  readonly lines: readonly string[];
}

/** Ranks the configurations by mean TTFT and by mean TPOT (medians over runs); pure, so the wording is tested. */
export function pdVerdict(results: readonly PdRunFigures[]): PdVerdict {
  const byName = new Map<string, PdRunFigures[]>();
  for (const r of results) {
    const name = r.configuration ?? r.policy;
    byName.set(name, [...(byName.get(name) ?? []), r]);
  }
  if (byName.size === 0) throw new Error('demo verdict: no runs');
  const summaries: PdSummary[] = [...byName.entries()].map(([configuration, runs]) => {
    const figure = (f: (pd: NonNullable<PdRunFigures['pd']>) => number | undefined) => {
      const values = runs.flatMap((r) => {
        const v = r.pd === undefined ? undefined : f(r.pd);
        return v === undefined ? [] : [v];
      });
      return values.length > 0 ? average(values) : undefined;
    };
    return {
      configuration,
      ttft: median(runs.map((r) => r.ttft.mean)),
      tpot: median(runs.map((r) => r.tpot.mean)),
      latency: median(runs.map((r) => r.latency.mean)),
      disaggregatedShare: average(
        runs.map((r) => (r.completed > 0 ? (r.pd?.disaggregated ?? 0) / r.completed : 0)),
      ),
      transferShareOfTtft: average(runs.map((r) => r.pd?.transferShareOfTtft ?? 0)),
      prefillQueueSeconds: figure((pd) => pd.prefillQueueSeconds),
      prefillLegSeconds: figure((pd) => pd.prefillSeconds),
      prefillCachedShare: prefillCachedShare(runs),
    };
  });
  const byTtft = [...summaries].sort((a, b) => a.ttft - b.ttft);
  const byTpot = [...summaries].sort((a, b) => a.tpot - b.tpot);
  const lines = [
    winsLine('TTFT', byTtft, (s) => s.ttft),
    winsLine('TPOT', byTpot, (s) => s.tpot),
    `Why, per configuration: ${summaries.map(why).join('; ')}.`,
    'A colocated replica runs prefills between its decodes, so long prompts stretch TPOT; disaggregation keeps decodes apart at the cost of a KV transfer and of fewer replicas for prompts (a longer prefill queue, and a lower cached share when prefills are placed without regard to prefixes).',
  ];
  return { summaries, ttftWinner: byTtft[0]!.configuration, tpotWinner: byTpot[0]!.configuration, lines };
}

/**
 * The prefills' cached share over runs: the engines' own count, else (no request disaggregated) the
 * answers' cached share; undefined where neither tells (a decode replica reports its adopted prompt cached).
 */
function prefillCachedShare(runs: readonly PdRunFigures[]): number | undefined {
  const shares = runs.flatMap((r) => {
    const share = r.pd?.prefillCachedShare ?? ((r.pd?.disaggregated ?? 0) === 0 ? r.cacheHitRate : undefined);
    return share === undefined ? [] : [share];
  });
  return shares.length > 0 ? average(shares) : undefined;
}

function why(s: PdSummary): string {
  const parts = [`${pct(s.disaggregatedShare)} of requests disaggregated`];
  if (s.disaggregatedShare > 0) parts.push(`KV transfer ${pct1(s.transferShareOfTtft)} of TTFT`);
  if (s.prefillLegSeconds !== undefined) parts.push(`prefill leg ${ms(s.prefillLegSeconds)}`);
  if (s.prefillQueueSeconds !== undefined) parts.push(`mixed replicas' queue ${ms(s.prefillQueueSeconds)}`);
  if (s.prefillCachedShare !== undefined)
    parts.push(`cached share of prefills ${s.prefillCachedShare.toFixed(2)}`);
  return `${s.configuration}: ${parts.join(', ')}`;
}

function pct1(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}

function winsLine(what: string, ranked: readonly PdSummary[], value: (s: PdSummary) => number): string {
  const best = ranked[0]!;
  if (ranked.length === 1) return `${what}: only ${best.configuration} ran (${ms(value(best))}).`;
  const rest = ranked
    .slice(1)
    .map((s) => `${s.configuration} ${ms(value(s))} (${pctMore(value(s), value(best))})`)
    .join(', ');
  return `${what}: ${best.configuration} wins with ${ms(value(best))} mean; ${rest}.`;
}

function pctMore(x: number, best: number): string {
  return best > 0 ? `+${(((x - best) / best) * 100).toFixed(0)}%` : 'n/a';
}

function pct(x: number): string {
  return `${(x * 100).toFixed(0)}%`;
}

function ms(s: number): string {
  return `${(s * 1000).toFixed(1)} ms`;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function average(values: readonly number[]): number {
  return values.length === 0 ? 0 : values.reduce((s, v) => s + v, 0) / values.length;
}
