export { createHistoryPredictor, type HistoryOptions, historyDefaults } from './history.ts';
export { createOraclePredictor, truthOf } from './oracle.ts';
export {
  createOracleBucketPredictor,
  type OracleBucketOptions,
  oracleBucketDefaults,
  TETRIINFER_ACCURACY,
} from './oracle-bucket.ts';
export { createOracleNoisePredictor, type OracleNoiseOptions, oracleNoiseDefaults } from './oracle-noise.ts';
export { createRankOraclePredictor, type RankOracleOptions, rankOracleDefaults } from './rank-oracle.ts';
export {
  createLengthPredictor,
  describeLengthPredictors,
  lengthPredictorNames,
  type PredictorContext,
  parsePredictorSpec,
} from './registry.ts';
export { doubled, midpoint, nextBucket } from './repredict.ts';
export { requestRandom } from './request-random.ts';
export { isOutrun, type LengthPrediction, type LengthPredictor, type LengthQuery } from './types.ts';
