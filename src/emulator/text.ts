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
