import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { lineChart } from '../report/plots/line-chart.ts';
import { svgToPng } from '../report/plots/svg-to-png.ts';

export interface PlotFile {
  readonly file: string;
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly { name: string; points: [number, number][] }[];
}

/** Render a line chart to `<dir>/<file>.svg` and `.png`. */
export async function writePlot(dir: string, plot: PlotFile): Promise<void> {
  const { svg } = await lineChart({
    title: plot.title,
    x: { label: plot.xLabel },
    y: { label: plot.yLabel },
    series: plot.series.map((s) => ({ name: s.name, points: s.points })),
  });
  await writeFile(join(dir, `${plot.file}.svg`), svg);
  await writeFile(join(dir, `${plot.file}.png`), svgToPng(svg, { width: 900 }));
}
