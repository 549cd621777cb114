import type { ModelShape } from './types.ts';

/**
 * Parameters of one layer's matrices: the attention projections (Q, K, V, O) and the MLP (three
 * matrices when gated, two for OPT), without biases and norms. What per-operator profiles such as
 * vidur's time as the non-attention work of a layer; the embedding and LM head are outside it.
 */
export function layerMatrixParams(model: ModelShape): number {
  if (model.mlpHidden === undefined) throw new Error(`${model.name} has no mlpHidden in its shape`);
  const q = model.heads * model.headDim;
  const kv = model.kvHeads * model.headDim;
  const attention = model.hidden * q + 2 * model.hidden * kv + q * model.hidden;
  return attention + (model.gatedMlp === false ? 2 : 3) * model.hidden * model.mlpHidden;
}
