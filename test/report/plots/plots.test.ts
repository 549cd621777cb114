import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { lineChart } from '../../../src/report/plots/line-chart.ts';
import { lineChartSpec } from '../../../src/report/plots/line-chart-spec.ts';
import { svgToPng } from '../../../src/report/plots/svg-to-png.ts';

const chart = {
  title: 'Average latency vs request rate',
  x: { label: 'Requests per second' },
  y: { label: 'Average latency (s)', log: true },
  series: [
    {
      name: 'e2',
      points: [
        [1, 0.5],
        [2, 0.7],
        [4, 1.5],
      ] as [number, number][],
    },
    {
      name: 'round-robin',
      points: [
        [1, 0.6],
        [2, 0],
        [4, 3.5],
      ] as [number, number][],
    },
  ],
};

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

describe('line charts', () => {
  it('renders an SVG naming the title, axes and series', async () => {
    const { svg } = await lineChart(chart);
    assert.ok(svg.startsWith('<svg'), svg.slice(0, 80));
    for (const text of [chart.title, 'Requests per second', 'Average latency (s)', 'e2', 'round-robin']) {
      assert.ok(svg.includes(text), `SVG lacks '${text}'`);
    }
  });

  it('keeps the series order and leaves non-positive values off a log axis', () => {
    const spec = lineChartSpec(chart) as { data: { values: { series: string; y: number }[] } };
    assert.deepEqual(
      spec.data.values.map((v) => [v.series, v.y]),
      [
        ['e2', 0.5],
        ['e2', 0.7],
        ['e2', 1.5],
        ['round-robin', 0.6],
        ['round-robin', 3.5],
      ],
    );
  });

  it('rasterises to a PNG of the requested width', async () => {
    const { svg } = await lineChart(chart);
    const png = svgToPng(svg, { width: 640 });
    assert.deepEqual(png.subarray(0, 8), PNG_SIGNATURE);
    // IHDR comes first: width and height are its first two big-endian 32-bit fields.
    assert.equal(png.toString('ascii', 12, 16), 'IHDR');
    assert.equal(png.readUInt32BE(16), 640);
    assert.ok(png.readUInt32BE(20) > 200);
    assert.throws(() => svgToPng(svg, { width: 0 }), /positive integer/);
  });
});
