/** `preble plan --out DIR`: the plan as JSON, the Markdown report, its plot, and the best fleet as a fleet file. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { svgToPng } from '../report/plots/svg-to-png.ts';
import type { PlanResult } from '../search/plan.ts';
import { paretoSvg } from '../search/plot.ts';
import { planMarkdown } from '../search/report.ts';

export async function writePlanOutputs(dir: string, plan: PlanResult, seconds: number): Promise<void> {
  const svg = await paretoSvg(plan);
  const command = `preble ${process.argv.slice(2).join(' ')}`;
  await Promise.all([
    writeFile(join(dir, 'plan.json'), `${JSON.stringify({ ...plan, seconds }, null, 2)}\n`),
    writeFile(join(dir, 'report.md'), planMarkdown(plan, command, 'pareto.png')),
    writeFile(join(dir, 'pareto.svg'), svg),
    writeFile(join(dir, 'pareto.png'), svgToPng(svg, { width: 900 })),
    ...(plan.best === undefined
      ? []
      : [
          writeFile(
            join(dir, 'fleet.json'),
            `${JSON.stringify({ instances: plan.best.instances }, null, 2)}\n`,
          ),
        ]),
  ]);
}
