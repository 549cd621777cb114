import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { formatLengthDist, MAX_LENGTH, parseLengthDist } from '../../src/workloads/length-dist.ts';
import { createWorkload } from '../../src/workloads/registry.ts';
import { parseSyntheticSpec, synthetic } from '../../src/workloads/synthetic.ts';
import { parseWorkloadSpec } from '../../src/workloads/traces/registry.ts';
import { fingerprint } from './helpers.ts';

const common = { rps: 10, seed: 7 };

function lengths(form: string, requests: number) {
  const stream = [...createWorkload(form, { ...common, requests })];
  return { input: stream.map((r) => r.tokens.length), output: stream.map((r) => r.outputTokens) };
}
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const sd = (xs: readonly number[]) => {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / xs.length);
};

describe('synthetic: parsing', () => {
  it('reads fixed lengths and each distribution, positional or named', () => {
    assert.deepEqual(parseSyntheticSpec('synthetic:in=512,out=64'), {
      input: { kind: 'fixed', value: 512 },
      output: { kind: 'fixed', value: 64 },
    });
    const spec = parseSyntheticSpec('synthetic:in=uniform(128,2048),out=lognormal(mean=256,sd=200,max=2048)');
    assert.deepEqual(spec.input, { kind: 'uniform', min: 128, max: 2048 });
    assert.deepEqual(spec.output, { kind: 'lognormal', mean: 256, sd: 200, min: 1, max: 2048 });
    assert.deepEqual(parseLengthDist('normal(300, 50, min=100)'), {
      kind: 'normal',
      mean: 300,
      sd: 50,
      min: 100,
      max: MAX_LENGTH,
    });
    assert.deepEqual(parseLengthDist('exp(mean=100,max=400)'), { kind: 'exp', mean: 100, min: 1, max: 400 });
    assert.deepEqual(parseLengthDist('exp(100)'), { kind: 'exp', mean: 100, min: 1, max: MAX_LENGTH });
    assert.deepEqual(parseLengthDist('fixed(9)'), { kind: 'fixed', value: 9 });
    assert.deepEqual(parseLengthDist('uniform(max=9,min=3)'), { kind: 'uniform', min: 3, max: 9 });
    // Order of in and out does not matter.
    assert.deepEqual(parseSyntheticSpec('synthetic:out=4,in=3'), parseSyntheticSpec('synthetic:in=3,out=4'));
  });

  it('formats a distribution back to a form that parses to it', () => {
    for (const text of [
      '7',
      'uniform(2,9)',
      'normal(mean=5,sd=2,min=3)',
      'lognormal(mean=9,sd=4,max=20)',
      'exp(mean=3)',
    ]) {
      const dist = parseLengthDist(text);
      assert.deepEqual(parseLengthDist(formatLengthDist(dist)), dist);
    }
  });

  it('throws one line naming the bad part, for every kind of mistake', () => {
    const cases: [string, RegExp][] = [
      ['synthetic:in=foo', /in=foo: expected a length/],
      ['synthetic:in=512', /needs both in= and out=/],
      ['synthetic:', /expected in=LENGTH or out=LENGTH/],
      ['synthetic:in=1,out=2,in=3', /in=3: in given twice/],
      ['synthetic:in=1,out=2,x=3', /x=3: expected in=LENGTH or out=LENGTH/],
      ['synthetic:in=1,out', /: out: expected in=LENGTH/],
      ['synthetic:in=0,out=2', /in=0: length=0: lengths are whole numbers of tokens from 1/],
      ['synthetic:in=1.5,out=2', /in=1.5: expected a length/],
      ['synthetic:in=-3,out=2', /in=-3: expected a length/],
      ['synthetic:in=99999999999,out=2', /lengths are whole numbers/],
      ['synthetic:in=gamma(1,2),out=2', /in=gamma\(1,2\): unknown distribution 'gamma'/],
      ['synthetic:in=uniform(5),out=2', /uniform needs min and max/],
      ['synthetic:in=uniform(9,5),out=2', /min 9 is above max 5/],
      ['synthetic:in=uniform(1,2,3),out=2', /uniform takes at most 2 arguments/],
      ['synthetic:in=normal(mean=5,sd=x),out=2', /sd=x is not a number/],
      ['synthetic:in=normal(mean=5),out=2', /normal needs mean and sd/],
      ['synthetic:in=normal(mean=5,sd=1,rate=2),out=2', /normal has no parameter 'rate'/],
      ['synthetic:in=normal(mean=5,1),out=2', /positional argument '1' after a named one/],
      ['synthetic:in=lognormal(0,1),out=2', /mean must be positive/],
      ['synthetic:in=lognormal(5,-1),out=2', /sd must not be negative/],
      ['synthetic:in=exp(mean=5,mean=6),out=2', /mean given twice/],
      ['synthetic:in=exp(5,min=0),out=2', /min=0: lengths are whole numbers/],
      ['synthetic:in=exp(5,out=2', /unclosed '\('/],
      ['synthetic:in=exp5),out=2', /unbalanced '\)'/],
    ];
    for (const [form, pattern] of cases) {
      assert.throws(
        () => parseSyntheticSpec(form),
        (error: Error) => {
          assert.match(error.message, pattern, form);
          assert.ok(!error.message.includes('\n'), `${form}: one line`);
          return true;
        },
      );
      // The same error reaches every entry point.
      assert.throws(() => parseWorkloadSpec(form), pattern);
      assert.throws(() => createWorkload(form, { ...common, requests: 1 }), pattern);
    }
  });

  it('is a workload form the CLI parses, and is listed among the valid forms', () => {
    const spec = parseWorkloadSpec('synthetic:in=5,out=6');
    assert.equal(spec.kind, 'synthetic');
    assert.throws(() => parseWorkloadSpec('nope'), /synthetic:in=LENGTH,out=LENGTH/);
    assert.throws(() => createWorkload('nope', { ...common, requests: 1 }), /synthetic:in=LENGTH,out=LENGTH/);
  });
});

describe('synthetic: the requested lengths hold', () => {
  it('fixed forms exactly, with distinct fresh tokens and Poisson arrivals at rps', () => {
    const requests = [...createWorkload('synthetic:in=512,out=64', { rps: 20, seed: 3, requests: 3000 })];
    assert.ok(requests.every((r) => r.tokens.length === 512 && r.outputTokens === 64));
    assert.ok(requests.every((r, n) => r.id === `synthetic-${n}` && r.workload === 'synthetic'));
    // No prefix sharing beyond chance: first four tokens all differ.
    assert.equal(new Set(requests.map((r) => r.tokens.slice(0, 4).join(','))).size, requests.length);
    const last = requests.at(-1)!.arrival;
    assert.ok(Math.abs(last / requests.length / (1 / 20) - 1) < 0.08, `mean gap ${last / requests.length}`);
  });

  it('uniform: within bounds, both bounds reached, mean in the middle', () => {
    const { input } = lengths('synthetic:in=uniform(100,200),out=1', 4000);
    assert.equal(Math.min(...input), 100);
    assert.equal(Math.max(...input), 200);
    assert.ok(Math.abs(mean(input) - 150) < 2, `mean ${mean(input)}`);
  });

  it('normal, lognormal and exp: sample means and spreads within tolerance', () => {
    const checks: [string, number, number][] = [
      ['normal(1000,100)', 1000, 100],
      ['lognormal(mean=256,sd=200)', 256, 200],
      ['exp(300)', 300, 300],
    ];
    for (const [dist, m, s] of checks) {
      const { output } = lengths(`synthetic:in=1,out=${dist}`, 4000);
      // Standard error of the mean is s/63 at 4000 requests: 5% of the mean is over 3 of them.
      assert.ok(Math.abs(mean(output) / m - 1) < 0.05, `${dist}: mean ${mean(output)} vs ${m}`);
      assert.ok(Math.abs(sd(output) / s - 1) < 0.15, `${dist}: sd ${sd(output)} vs ${s}`);
      assert.ok(output.every((x) => Number.isInteger(x) && x >= 1));
    }
  });

  it('clamps to min and max: mass piles up at the bounds, nothing lies outside', () => {
    const { input, output } = lengths(
      'synthetic:in=normal(500,300,min=400,max=600),out=exp(100,max=50)',
      4000,
    );
    assert.ok(input.every((x) => x >= 400 && x <= 600));
    // P(N(500,300) < 400) = P(z < -1/3) = 37%: the clamped share sits on each bound.
    const atMin = input.filter((x) => x === 400).length / input.length;
    const atMax = input.filter((x) => x === 600).length / input.length;
    assert.ok(Math.abs(atMin - 0.37) < 0.03 && Math.abs(atMax - 0.37) < 0.03, `${atMin} ${atMax}`);
    assert.ok(output.every((x) => x >= 1 && x <= 50));
    // P(Exp(mean 100) >= 49.5) = e^-0.495 = 61%.
    assert.ok(Math.abs(output.filter((x) => x === 50).length / output.length - 0.61) < 0.03);
  });

  it('any valid uniform or clamped form stays within its bounds (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: 0, max: 5000 }),
        fc.constantFrom('uniform', 'normal', 'lognormal', 'exp'),
        fc.integer({ min: 0, max: 1000 }),
        (lo, span, kind, seed) => {
          const hi = lo + span;
          const dist =
            kind === 'uniform'
              ? `uniform(${lo},${hi})`
              : kind === 'exp'
                ? `exp(${lo + span / 2},min=${lo},max=${hi})`
                : `${kind}(${lo + span / 2},${span + 1},min=${lo},max=${hi})`;
          const stream = synthetic(`synthetic:in=${dist},out=${dist}`, { requests: 20, rps: 1, seed });
          for (const r of stream) {
            for (const x of [r.tokens.length, r.outputTokens]) assert.ok(x >= lo && x <= hi, `${dist}: ${x}`);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('synthetic: determinism', () => {
  const form = 'synthetic:in=lognormal(300,200),out=exp(50)';
  it('the same seed replays byte for byte; another seed does not', () => {
    const first = fingerprint([...createWorkload(form, { ...common, requests: 200 })]);
    assert.deepEqual(fingerprint([...createWorkload(form, { ...common, requests: 200 })]), first);
    const other = fingerprint([...createWorkload(form, { ...common, seed: 8, requests: 200 })]);
    assert.notDeepEqual(
      other.map((r) => r.outputTokens),
      first.map((r) => r.outputTokens),
    );
  });

  it('is lazy: the first requests of an endless stream come at once', () => {
    let n = 0;
    for (const _ of createWorkload(form, { ...common, requests: Number.POSITIVE_INFINITY })) {
      if (++n === 5) break;
    }
    assert.equal(n, 5);
  });
});
