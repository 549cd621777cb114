/** A plan as Markdown (the `--out` report) and as the lines `preble plan` prints. Pure. */
import { fixed } from '../report/text-table.ts';
import type { ObjectiveName } from './economics.ts';
import type { Recommendation } from './evaluated.ts';
import type { PlanResult } from './plan.ts';

const OBJECTIVE_WORDS: Record<ObjectiveName, string> = {
  perDollar: 'rate per dollar',
  perGpu: 'rate per GPU',
  perKilowatt: 'rate per kW',
};

/** One recommendation on one line: label, capacity, GPUs, cost, the objectives. */
export function describeRecommendation(r: Recommendation): string {
  const { economics: e, objectives: o } = r;
  const parts = [
    `${fixed(r.capacity, 2)} req/s`,
    `${e.gpus} GPU${e.gpus === 1 ? '' : 's'}`,
    ...(e.costPerHour === undefined ? [] : [`$${fixed(e.costPerHour, 2)}/h`]),
    ...(o.perDollar === undefined ? [] : [`${fixed(o.perDollar, 3)} req/s per $/h`]),
    `${fixed(o.perGpu, 3)} req/s per GPU`,
  ];
  const check =
    r.verification === undefined
      ? ''
      : `; simulated at ${fixed(r.verification.rps, 2)} req/s: ${fixed(r.verification.attainment.both * 100, 1)}% meet both SLOs, p99 scheduling delay ${fixed(r.verification.p99SchedulingDelay, 2)} s (${r.verification.passed ? 'passes' : 'misses'})`;
  return `${r.label} (${r.policy}): ${parts.join(', ')}${check}`;
}

/** The lines `preble plan` prints. */
export function planSummary(plan: PlanResult, seconds: number): string {
  const lines = [
    `${plan.question} question: ${plan.configurations} configurations evaluated (${plan.cached} cached, ${plan.skipped} left out) in ${fixed(seconds, 1)} s; capacity: ${plan.criterion}`,
  ];
  const goal =
    plan.rate === undefined
      ? OBJECTIVE_WORDS[plan.objective]
      : `cheapest fleet for ${fixed(plan.rate, 2)} req/s`;
  lines.push(
    plan.best === undefined
      ? `best (${goal}): none found`
      : `best (${goal}): ${describeRecommendation(plan.best)}`,
  );
  if (plan.runnerUp !== undefined) lines.push(`runner-up: ${describeRecommendation(plan.runnerUp)}`);
  for (const [name, r] of Object.entries(plan.bestBy)) {
    if (r !== undefined && name !== plan.objective)
      lines.push(`best by ${OBJECTIVE_WORDS[name as ObjectiveName]}: ${describeRecommendation(r)}`);
  }
  const phases = plan.details?.phases as
    | {
        phase: string;
        configuration: string;
        goodput: number;
        bracketed?: boolean;
        goodputPerGpu: number;
        replicas: number;
        helpers?: number;
      }[]
    | undefined;
  for (const p of phases ?? [])
    lines.push(
      `${p.phase}: ${p.replicas} × (${p.configuration}), goodput ${fixed(p.goodput, 2)}${p.bracketed === false ? '+' : ''} req/s, ${fixed(p.goodputPerGpu, 3)} per GPU${p.helpers === undefined ? '' : ` (measured beside ${p.helpers} ${p.phase === 'prefill' ? 'decode' : 'prefill'} instances)`}`,
    );
  const budget = plan.details?.budget as
    | { kind: string; value: number; machines: number; gpu: string }
    | undefined;
  const baseline = plan.details?.baseline as { label: string; capacity: number } | undefined;
  if (budget !== undefined && baseline !== undefined)
    lines.push(
      `budget: ${budget.kind === 'cost' ? `$${fixed(budget.value, 2)}/h` : `${fixed(budget.value, 0)} W`} (${budget.machines} ${budget.gpu} machines); ${baseline.label}: ${fixed(baseline.capacity, 2)} req/s`,
    );
  const sizing = plan.details?.sizing as
    | { label: string; capacityPerWorker: number; workers: number; gpusPerWorker: number; gpus: number }[]
    | undefined;
  for (const w of (sizing ?? []).slice(0, 3))
    lines.push(
      `workers for ${fixed(Number(plan.details?.rate), 2)} req/s: ${w.workers} × (${w.label}), ${w.gpusPerWorker} GPU(s) each, ${w.gpus} GPUs; ${fixed(w.capacityPerWorker, 2)} req/s per worker`,
    );
  lines.push(`Pareto front (capacity against cost): ${plan.pareto.length} configurations`);
  return lines.join('\n');
}

/** The Markdown report: the answer, the Pareto front, and every configuration evaluated. */
export function planMarkdown(plan: PlanResult, command: string, plotFile?: string): string {
  const out = [
    `# preble plan: the ${plan.question} question`,
    '',
    `Command: \`${command}\``,
    '',
    '```',
    planSummary(plan, Number.NaN).replace(/ in NaN s/, ''),
    '```',
    '',
  ];
  if (plotFile !== undefined) out.push(`![capacity against cost](${plotFile})`, '');
  out.push(
    '## Pareto front (capacity against cost)',
    '',
    table(
      ['configuration', 'capacity (req/s)', 'GPUs', '$/h'],
      plan.pareto.map((p) => [
        p.label,
        fixed(p.capacity, 2),
        String(p.gpus),
        p.costPerHour === undefined ? '-' : fixed(p.costPerHour, 2),
      ]),
    ),
    '',
    '## Every configuration',
    '',
    table(
      [
        'configuration',
        'capacity (req/s)',
        'GPUs',
        '$/h',
        'req/s per $/h',
        'req/s per GPU',
        'req/s per kW',
        'runs',
      ],
      plan.evaluated.map((e) => [
        e.label,
        `${fixed(e.capacity, 2)}${e.bracketed ? '' : '+'}`,
        String(e.economics.gpus),
        e.economics.costPerHour === undefined ? '-' : fixed(e.economics.costPerHour, 2),
        e.objectives.perDollar === undefined ? '-' : fixed(e.objectives.perDollar, 3),
        fixed(e.objectives.perGpu, 3),
        e.objectives.perKilowatt === undefined ? '-' : fixed(e.objectives.perKilowatt, 2),
        String(e.probes),
      ]),
    ),
    '',
  );
  return out.join('\n');
}

function table(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const line = (cells: readonly (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
