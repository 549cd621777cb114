/** An ordinary least-squares line y = intercept + slope * x, with how well it fits. */
export interface LineFit {
  readonly intercept: number;
  readonly slope: number;
  readonly rSquared: number;
  readonly maxAbsError: number;
  /** Largest |residual| / |y| over points with y != 0. */
  readonly maxRelError: number;
  readonly points: number;
}

export function fitLine(xs: readonly number[], ys: readonly number[]): LineFit {
  const n = xs.length;
  if (n !== ys.length || n < 2) throw new Error('fitLine needs two or more (x, y) pairs of equal length');
  const meanX = xs.reduce((sum, x) => sum + x, 0) / n;
  const meanY = ys.reduce((sum, y) => sum + y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = xs[i]! - meanX;
    const dy = ys[i]! - meanY;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  if (sxx === 0) throw new Error('fitLine needs at least two distinct x values');
  const slope = sxy / sxx;
  const intercept = meanY - slope * meanX;
  let residualSquares = 0;
  let maxAbsError = 0;
  let maxRelError = 0;
  for (let i = 0; i < n; i++) {
    const y = ys[i]!;
    const residual = Math.abs(y - (intercept + slope * xs[i]!));
    residualSquares += residual * residual;
    maxAbsError = Math.max(maxAbsError, residual);
    if (y !== 0) maxRelError = Math.max(maxRelError, residual / Math.abs(y));
  }
  const rSquared = syy === 0 ? 1 : 1 - residualSquares / syy;
  return { intercept, slope, rSquared, maxAbsError, maxRelError, points: n };
}
