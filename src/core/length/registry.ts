import { describeWithDefaults, withDefaults } from '../with-defaults.ts';
import { createHistoryPredictor, historyDefaults } from './history.ts';
import { createOraclePredictor } from './oracle.ts';
import { createOracleBucketPredictor, oracleBucketDefaults, TETRIINFER_ACCURACY } from './oracle-bucket.ts';
import { createOracleNoisePredictor, oracleNoiseDefaults } from './oracle-noise.ts';
import { createRankOraclePredictor, rankOracleDefaults } from './rank-oracle.ts';
import type { LengthPredictor } from './types.ts';

/** Every predictor option is a number; each predictor reads only its own. */
type PredictorOptions = Record<string, number>;

interface PredictorEntry {
  /** One line for `--help` and the docs. */
  readonly summary: string;
  readonly defaults: PredictorOptions;
  readonly create: (options: PredictorOptions) => LengthPredictor;
}

function tetriinfer(granularity: 100 | 200 | 400): PredictorEntry {
  const name = `tetriinfer-${granularity}`;
  return {
    summary: `oracle-bucket preset: ${granularity}-token buckets at TetriInfer's measured ${TETRIINFER_ACCURACY[granularity] * 100}% accuracy`,
    defaults: { accuracy: TETRIINFER_ACCURACY[granularity], seed: 0 },
    create: (o) =>
      createOracleBucketPredictor({ granularity, accuracy: o.accuracy ?? 0, seed: o.seed ?? 0 }, name),
  };
}

/** The length predictors, by name (`NAME` or `NAME:KEY=VALUE,...`). Adding one is one row here. */
const PREDICTORS: Record<string, PredictorEntry> = {
  oracle: {
    summary: 'the exact output length (TRAIL+ when used by trail)',
    defaults: {},
    create: createOraclePredictor,
  },
  'oracle-noise': {
    summary: 'truth x exp(sigma N(0,1)) per request; outrun: doubling',
    defaults: oracleNoiseDefaults,
    create: (o) => createOracleNoisePredictor(withDefaults(oracleNoiseDefaults, o)),
  },
  'oracle-bucket': {
    summary:
      'TetriInfer-like classifier: the true granularity-wide bucket with probability accuracy, else a neighbour; outrun: next bucket',
    defaults: oracleBucketDefaults,
    create: (o) => createOracleBucketPredictor(withDefaults(oracleBucketDefaults, o)),
  },
  'tetriinfer-100': tetriinfer(100),
  'tetriinfer-200': tetriinfer(200),
  'tetriinfer-400': tetriinfer(400),
  'rank-oracle': {
    summary: "scores with Kendall's tau against the truth (LTR's ranker); outrun: doubling",
    defaults: rankOracleDefaults,
    create: (o) => createRankOraclePredictor(withDefaults(rankOracleDefaults, o)),
  },
  history: {
    summary:
      'mean output of finished requests with the same key, else the same input-length bucket, else prior; outrun: doubling',
    defaults: historyDefaults,
    create: (o) => createHistoryPredictor(withDefaults(historyDefaults, o)),
  },
};

export const lengthPredictorNames = Object.keys(PREDICTORS);

export interface PredictorContext {
  /** The run's seed: a predictor that draws takes it unless its spec names `seed=`. */
  readonly seed?: number;
}

/** A predictor spec's name and options; throws one line naming the bad part. */
export function parsePredictorSpec(spec: string): {
  readonly name: string;
  readonly options: PredictorOptions;
} {
  const colon = spec.indexOf(':');
  const name = colon === -1 ? spec : spec.slice(0, colon);
  const row = Object.hasOwn(PREDICTORS, name) ? PREDICTORS[name] : undefined;
  if (row === undefined) {
    throw new Error(`unknown length predictor '${name}'; valid names: ${lengthPredictorNames.join(', ')}`);
  }
  const options: PredictorOptions = {};
  if (colon === -1) return { name, options };
  const keys = Object.keys(row.defaults);
  for (const part of spec.slice(colon + 1).split(',')) {
    const eq = part.indexOf('=');
    const key = eq === -1 ? part : part.slice(0, eq);
    const value = Number(part.slice(eq + 1));
    if (eq === -1 || !keys.includes(key)) {
      throw new Error(
        `length predictor '${spec}': '${part}' is not KEY=VALUE with a known key; ${name} takes ${keys.length === 0 ? 'no options' : keys.join(', ')}`,
      );
    }
    if (part.slice(eq + 1).trim() === '' || !Number.isFinite(value)) {
      throw new Error(`length predictor '${spec}': ${key} must be a number, got '${part.slice(eq + 1)}'`);
    }
    options[key] = value;
  }
  return { name, options };
}

/** A fresh predictor (each owns its history) from `NAME` or `NAME:KEY=VALUE,...`. */
export function createLengthPredictor(spec: string, context: PredictorContext = {}): LengthPredictor {
  const { name, options } = parsePredictorSpec(spec);
  const row = PREDICTORS[name] as PredictorEntry;
  const seeded = 'seed' in row.defaults && options.seed === undefined && context.seed !== undefined;
  return row.create(withDefaults(row.defaults, seeded ? { ...options, seed: context.seed } : options));
}

/** One line per predictor with its options and defaults, for `--help`. */
export function describeLengthPredictors(): string[] {
  return lengthPredictorNames.map((name) => {
    const row = PREDICTORS[name] as PredictorEntry;
    return describeWithDefaults(name, row.summary, row.defaults);
  });
}
