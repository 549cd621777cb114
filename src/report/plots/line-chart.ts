import { parse, View } from 'vega';
import { compile } from 'vega-lite';
import { type LineChart, lineChartSpec } from './line-chart-spec.ts';

/** A line chart rendered to a standalone SVG document, headless (no DOM, no canvas). */
export async function lineChart(chart: LineChart): Promise<{ svg: string }> {
  const view = new View(parse(compile(lineChartSpec(chart)).spec), { renderer: 'none' });
  try {
    return { svg: await view.toSVG() };
  } finally {
    view.finalize();
  }
}
