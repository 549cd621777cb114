import { fleetGpuCount, perGpu } from '../core/fleet/cost.ts';
import { fixed, textTable } from '../report/text-table.ts';
import { type GoodputProbe, goodput } from '../search/goodput.ts';
import { runSimulation, type SimSpec } from '../sim/run.ts';

/** `preble sim --goodput` for one policy: the search's answer and every rate it ran. */
export interface GoodputReport {
  readonly policy: string;
  readonly instances: number;
  /** Share of requests that must meet both SLOs. */
  readonly target: number;
  /** The highest rate found meeting the target (requests per second); 0 if the first rate misses. */
  readonly goodputRps: number;
  readonly goodputPerInstance: number;
  /** With a fleet (`--fleet`): its GPUs and the goodput per GPU (DistServe's figure of merit). */
  readonly gpus?: number;
  readonly goodputPerGpu?: number;
  /** False when every doubling still met the target: goodputRps is then only a lower bound. */
  readonly bracketed: boolean;
  readonly probes: readonly GoodputProbe[];
}

/** Goodput by bisection over simulated runs of the same stream re-timed to each probed rate. */
export function searchGoodput(
  specAt: (rps: number) => SimSpec,
  options: { readonly low: number; readonly target: number },
): GoodputReport {
  const first = specAt(options.low);
  process.stderr.write(`goodput of ${first.policy}: searching from ${options.low} req/s\n`);
  const result = goodput(
    (rps) => {
      const { report } = runSimulation(specAt(rps));
      process.stderr.write(
        `  ${first.policy} @ ${fixed(rps, 3)} req/s: ${fixed(report.sloAttainment?.both ?? 0, 3)} meet both SLOs\n`,
      );
      return report;
    },
    { low: options.low, target: options.target },
  );
  return {
    policy: first.policy,
    instances: first.instances,
    target: options.target,
    goodputRps: result.rps,
    goodputPerInstance: result.rps / first.instances,
    ...(first.fleet === undefined
      ? {}
      : { gpus: fleetGpuCount(first.fleet), goodputPerGpu: perGpu(result.rps, first.fleet) }),
    bracketed: result.bracketed,
    probes: result.probes,
  };
}

export function goodputTable(reports: readonly GoodputReport[]): string {
  const perGpuColumn = reports.some((r) => r.goodputPerGpu !== undefined);
  return textTable(
    ['policy', 'goodput (req/s)', 'per instance', ...(perGpuColumn ? ['per GPU'] : []), 'target', 'runs'],
    reports.map((r) => [
      r.policy,
      `${fixed(r.goodputRps, 3)}${r.bracketed ? '' : '+'}`,
      fixed(r.goodputPerInstance, 3),
      ...(perGpuColumn ? [fixed(r.goodputPerGpu ?? 0, 3)] : []),
      r.target,
      r.probes.length,
    ]),
  );
}
