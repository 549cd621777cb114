import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createLengthPredictor,
  describeLengthPredictors,
  lengthPredictorNames,
  parsePredictorSpec,
} from '../../../src/core/length/registry.ts';
import { query } from './helpers.ts';

describe('length predictor registry', () => {
  it('creates every row by name, with a help line each', () => {
    for (const name of lengthPredictorNames)
      assert.equal(typeof createLengthPredictor(name).predict, 'function');
    assert.equal(describeLengthPredictors().length, lengthPredictorNames.length);
    assert.match(describeLengthPredictors().join('\n'), /oracle-bucket: .*granularity=200, accuracy=0.749/);
  });

  it('parses NAME:KEY=VALUE options and applies them', () => {
    assert.deepEqual(parsePredictorSpec('oracle-bucket:granularity=100,accuracy=1'), {
      name: 'oracle-bucket',
      options: { granularity: 100, accuracy: 1 },
    });
    const p = createLengthPredictor('oracle-bucket:granularity=100,accuracy=1');
    assert.deepEqual(p.predict(query('a', 250), 0).bucket, { low: 200, high: 300 });
  });

  it('presets carry TetriInfer granularities and accuracies', () => {
    const p = createLengthPredictor('tetriinfer-400:accuracy=1');
    assert.equal(p.name, 'tetriinfer-400');
    assert.deepEqual(p.predict(query('a', 250), 0).bucket, { low: 0, high: 400 });
  });

  it('takes the run seed unless the spec names one', () => {
    const fromContext = createLengthPredictor('oracle-noise', { seed: 5 }).predict(query('a', 1000), 0);
    const fromSpec = createLengthPredictor('oracle-noise:seed=5', { seed: 9 }).predict(query('a', 1000), 0);
    assert.deepEqual(fromContext, fromSpec);
  });

  it('rejects unknown names, keys and non-numbers in one line', () => {
    assert.throws(
      () => createLengthPredictor('magic'),
      /unknown length predictor 'magic'; valid names: oracle,/,
    );
    assert.throws(() => createLengthPredictor('oracle:x=1'), /oracle takes no options/);
    assert.throws(() => createLengthPredictor('history:prior=abc'), /prior must be a number/);
    assert.throws(() => createLengthPredictor('history:prior'), /not KEY=VALUE/);
  });
});
