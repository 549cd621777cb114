/**
 * Least squares over a few columns, for fitting cost models to measurements. Columns are scaled to unit
 * norm before solving: cost-model features span ten orders of magnitude (1 per iteration up to millions of
 * attention pairs), and the normal equations of the raw columns lose every digit.
 */

type Matrix = readonly (readonly number[])[];

/** Solve the square system m x = v by Gaussian elimination with partial pivoting; undefined when singular. */
function solveSquare(m: number[][], v: number[]): number[] | undefined {
  const n = v.length;
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let row = col + 1; row < n; row++) {
      if (Math.abs(m[row]![col]!) > Math.abs(m[pivot]![col]!)) pivot = row;
    }
    if (Math.abs(m[pivot]![col]!) < 1e-12) return undefined;
    [m[col], m[pivot]] = [m[pivot]!, m[col]!];
    [v[col], v[pivot]] = [v[pivot]!, v[col]!];
    for (let row = col + 1; row < n; row++) {
      const factor = m[row]![col]! / m[col]![col]!;
      for (let k = col; k < n; k++) m[row]![k]! -= factor * m[col]![k]!;
      v[row]! -= factor * v[col]!;
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let row = n - 1; row >= 0; row--) {
    let sum = v[row]!;
    for (let k = row + 1; k < n; k++) sum -= m[row]![k]! * x[k]!;
    x[row] = sum / m[row]![row]!;
  }
  return x;
}

/** Unconstrained least squares over the columns in `use` (the others stay 0), via the normal equations. */
function solveOn(
  a: Matrix,
  y: readonly number[],
  use: readonly number[],
  columns: number,
): number[] | undefined {
  const gram = use.map((i) => use.map((j) => a.reduce((sum, row) => sum + row[i]! * row[j]!, 0)));
  const rhs = use.map((i) => a.reduce((sum, row, r) => sum + row[i]! * y[r]!, 0));
  const solved = solveSquare(gram, rhs);
  if (solved === undefined) return undefined;
  const x = new Array<number>(columns).fill(0);
  use.forEach((column, k) => {
    x[column] = solved[k]!;
  });
  return x;
}

function checkShape(a: Matrix, y: readonly number[]): number {
  const columns = a[0]?.length ?? 0;
  if (a.length !== y.length || a.length === 0 || columns === 0)
    throw new Error('least squares needs one non-empty row per observation');
  if (a.some((row) => row.length !== columns)) throw new Error('least squares rows differ in length');
  return columns;
}

/** Scale each column to unit norm; returns the scaled rows and the norms (1 for an all-zero column). */
function scaleColumns(a: Matrix, columns: number): { scaled: number[][]; norms: number[] } {
  const norms = Array.from({ length: columns }, (_, j) => Math.hypot(...a.map((row) => row[j]!)) || 1);
  return { scaled: a.map((row) => row.map((value, j) => value / norms[j]!)), norms };
}

/** x minimizing |a x - y|^2; throws when the columns are linearly dependent. */
export function leastSquares(a: Matrix, y: readonly number[]): number[] {
  const columns = checkShape(a, y);
  const { scaled, norms } = scaleColumns(a, columns);
  const x = solveOn(
    scaled,
    y,
    norms.map((_, j) => j),
    columns,
  );
  if (x === undefined) throw new Error('least squares: the columns are linearly dependent');
  return x.map((value, j) => value / norms[j]!);
}

/**
 * x >= 0 minimizing |a x - y|^2 (Lawson and Hanson's active-set NNLS). A cost model's coefficients are
 * costs: a negative one would make time fall as work grows somewhere in the fitted range or beyond it.
 */
export function nonNegativeLeastSquares(a: Matrix, y: readonly number[], maxIterations = 100): number[] {
  const columns = checkShape(a, y);
  const { scaled, norms } = scaleColumns(a, columns);
  const tolerance = 1e-12 * Math.max(1, Math.hypot(...y));
  const gradient = (x: readonly number[]) => {
    const residual = scaled.map((row, r) => y[r]! - row.reduce((sum, v, j) => sum + v * x[j]!, 0));
    return norms.map((_, j) => scaled.reduce((sum, row, r) => sum + row[j]! * residual[r]!, 0));
  };
  let x = new Array<number>(columns).fill(0);
  const passive = new Set<number>();
  const dependent = new Set<number>();
  for (let outer = 0; outer < maxIterations; outer++) {
    const w = gradient(x);
    let best = -1;
    for (let j = 0; j < columns; j++) {
      if (!passive.has(j) && !dependent.has(j) && w[j]! > tolerance && (best < 0 || w[j]! > w[best]!))
        best = j;
    }
    if (best < 0) break;
    passive.add(best);
    for (let inner = 0; inner < maxIterations; inner++) {
      const s = solveOn(scaled, y, [...passive].sort(), columns);
      if (s === undefined) {
        // The new column depends on the others: leave it out for good.
        passive.delete(best);
        dependent.add(best);
        break;
      }
      if ([...passive].every((j) => s[j]! > 0)) {
        x = s;
        break;
      }
      // Step from x toward s as far as stays feasible, then drop the columns that hit zero.
      let alpha = 1;
      for (const j of passive) {
        if (s[j]! <= 0) alpha = Math.min(alpha, x[j]! / (x[j]! - s[j]!));
      }
      x = x.map((value, j) => value + alpha * (s[j]! - value));
      for (const j of [...passive]) {
        if (x[j]! <= tolerance) {
          passive.delete(j);
          x[j] = 0;
        }
      }
    }
  }
  return x.map((value, j) => value / norms[j]!);
}
