/** The plan's plot: every configuration's capacity against its cost, the Pareto front as a line. */
import { parse, View } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { CHART_FONT } from '../report/plots/line-chart-spec.ts';
import { costOf } from './evaluated.ts';
import type { PlanResult } from './plan.ts';

/** The Vega-Lite spec (pure): points coloured by GPU, the front joined in cost order. */
export function paretoSpec(plan: PlanResult): TopLevelSpec {
  const priced = plan.evaluated.every((e) => e.economics.costPerHour !== undefined);
  const cost = priced ? 'cost (US dollars per hour)' : 'GPUs';
  const gpuOf = (configuration: object) => (configuration as { gpu?: string }).gpu ?? 'fleet';
  const points = plan.evaluated
    .filter((e) => e.capacity > 0)
    .map((e) => ({
      cost: costOf(e.economics),
      capacity: e.capacity,
      gpu: gpuOf(e.configuration),
      label: e.label,
    }));
  const front = plan.pareto.map((p) => ({ cost: p.costPerHour ?? p.gpus, capacity: p.capacity }));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: `preble plan (${plan.question}): capacity against cost, ${plan.configurations} configurations`,
    width: 480,
    height: 300,
    background: 'white',
    config: { font: CHART_FONT },
    layer: [
      {
        data: { values: points },
        mark: { type: 'point', filled: true, opacity: 0.6 },
        encoding: {
          x: { field: 'cost', type: 'quantitative', title: cost },
          y: { field: 'capacity', type: 'quantitative', title: `capacity (req/s, ${plan.criterion})` },
          color: { field: 'gpu', type: 'nominal', title: 'GPU' },
        },
      },
      {
        data: { values: front },
        mark: { type: 'line', color: 'black', point: { color: 'black' } },
        encoding: {
          x: { field: 'cost', type: 'quantitative' },
          y: { field: 'capacity', type: 'quantitative' },
          order: { field: 'cost', type: 'quantitative' },
        },
      },
    ],
  };
}

/** The plot as a standalone SVG document, headless. */
export async function paretoSvg(plan: PlanResult): Promise<string> {
  const view = new View(parse(compile(paretoSpec(plan)).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
