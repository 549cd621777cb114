/**
 * Aladdin's re-balancing (seed 004, Aladdin §4.3, Algorithm 2): output-length prediction errors found
 * since the last heartbeat leave some workers over- and some under-utilized against their plan; requests
 * placed but not started move from the first to the second. Pure: the errors and the movable requests
 * come in, the moves go out.
 *
 * A worker's error is (l_e, b_e): l_e the context tokens its requests hold beyond (or, negative, short
 * of) what placement planned, in constraint (b)'s units (l_in + γ·l_out, so a re-predicted request adds
 * γ·(l'_pred − l_pred)), and b_e the requests it holds beyond plan (+1 for one that outran its
 * prediction, −1 for one that finished before it). The paper's "equivalent error function"
 * α·l_e + β·b_e + c = 0 comes from Eq. 4, which it leaves unspecified: (b) reads
 * (k2/θ)·Σ(l_in + γ·l_out) + c2·b ≤ T_dec − c3, so an error moves the left side by
 * c = α·l_e + β·b_e with α = k2/θ and β = c2 (seconds of decode step: positive over plan, negative
 * under). Each worker's line α·l + β·b = c lies |c| / √(α² + β²) from the origin; the moves minimize
 * the sum of those distances (a greedy descent: the best single move while one improves the sum).
 */

export interface WorkerError {
  readonly instance: number;
  /** Context tokens beyond plan, in (b)'s units, and requests beyond plan. */
  le: number;
  be: number;
}

/** A request placed on `instance` and not started: it may move. */
export interface Movable {
  readonly id: string;
  readonly instance: number;
  /** What it weighs in (b): l_in + γ·l_pred. */
  readonly tokens: number;
}

export interface Move {
  readonly id: string;
  readonly from: number;
  readonly to: number;
}

/** α and β of the error line (above), from Eq. 3's fit and θ. */
export interface ErrorLine {
  readonly alpha: number;
  readonly beta: number;
}

export const errorLine = (k2: number, c2: number, theta: number): ErrorLine => ({
  alpha: k2 / theta,
  beta: c2,
});

/** A worker's distance from plan: |α·l_e + β·b_e| / √(α² + β²). */
export function distance(line: ErrorLine, le: number, be: number): number {
  const norm = Math.hypot(line.alpha, line.beta);
  return norm > 0 ? Math.abs(line.alpha * le + line.beta * be) / norm : 0;
}

/**
 * Moves from over- to under-utilized workers (signed error above zero, below zero) that lower the summed
 * distance, best first, each request at most once; `fits(request, to)` (the placement constraints on
 * the destination, with the moves made so far: `moved` tells of each) must hold. `errors` is updated
 * in place as the moves apply.
 */
export function rebalance(
  line: ErrorLine,
  errors: readonly WorkerError[],
  movable: readonly Movable[],
  fits: (request: Movable, to: number) => boolean,
  moved: (request: Movable, to: number) => void = () => {},
): Move[] {
  const signed = (w: WorkerError) => line.alpha * w.le + line.beta * w.be;
  const byInstance = new Map(errors.map((w) => [w.instance, w]));
  const left = [...movable];
  const moves: Move[] = [];
  for (;;) {
    let best: { at: number; to: WorkerError; gain: number } | undefined;
    for (let at = 0; at < left.length; at++) {
      const r = left[at]!;
      const from = byInstance.get(r.instance);
      if (from === undefined || signed(from) <= 0) continue;
      for (const to of errors) {
        if (to === from || signed(to) >= 0) continue;
        const before = distance(line, from.le, from.be) + distance(line, to.le, to.be);
        const after =
          distance(line, from.le - r.tokens, from.be - 1) + distance(line, to.le + r.tokens, to.be + 1);
        const gain = before - after;
        if (gain > 1e-12 && (best === undefined || gain > best.gain) && fits(r, to.instance))
          best = { at, to, gain };
      }
    }
    if (best === undefined) return moves;
    const r = left[best.at]!;
    const from = byInstance.get(r.instance)!;
    from.le -= r.tokens;
    from.be -= 1;
    best.to.le += r.tokens;
    best.to.be += 1;
    left.splice(best.at, 1);
    moved(r, best.to.instance);
    moves.push({ id: r.id, from: r.instance, to: best.to.instance });
  }
}
