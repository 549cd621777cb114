/** The characters generated text cycles through. */
export const FILLER = 'lorem ipsum dolor sit amet ';

/** The deterministic i-th generated token (a code point of FILLER), shifted by `offset`. */
export function generatedToken(index: number, offset = 0): number {
  return FILLER.codePointAt((index + offset) % FILLER.length)!;
}

export function generatedText(count: number, offset = 0): string {
  let s = '';
  for (let i = 0; i < count; i++) s += String.fromCodePoint(generatedToken(i, offset));
  return s;
}

/** What one choice generates: tokens the engine runs, characters the client sees, and why it ends. */
export interface ChoicePlan {
  /** Output tokens the engine generates (a stop string's own tokens included, as engines count them). */
  readonly tokens: number;
  /** Leading characters of the generated text the client gets (a stop string and what follows cut off). */
  readonly visible: number;
  readonly finish: 'stop' | 'length';
}

/**
 * The generated text is known in advance, so a stop string is honoured exactly: generation ends with
 * the first occurrence of any stop string (finish_reason `stop`, the string itself not returned), else
 * after `maxTokens` (`length`).
 */
export function planChoice(maxTokens: number, offset: number, stops: readonly string[]): ChoicePlan {
  const text = generatedText(maxTokens, offset);
  let best: { at: number; end: number } | undefined;
  for (const s of stops) {
    const at = text.indexOf(s);
    if (at >= 0 && (best === undefined || at < best.at)) best = { at, end: at + s.length };
  }
  if (best === undefined) return { tokens: maxTokens, visible: maxTokens, finish: 'length' };
  return { tokens: best.end, visible: best.at, finish: 'stop' };
}
