/**
 * Workload token ids to text, one printable code point per id and never the same one for two ids
 * (CJK ideographs, then Hangul syllables), so the gateway's chars tokenizer sees exactly the
 * workload's sharing structure.
 */
export function renderTokens(tokens: Uint32Array): string {
  let s = '';
  for (let i = 0; i < tokens.length; i++) {
    const id = tokens[i]!;
    s += String.fromCodePoint(id < 20_992 ? 0x4e00 + id : 0xac00 + ((id - 20_992) % 11_172));
  }
  return s;
}
