/** llama.cpp token types (llama_token_type / gguf-py TokenType). */
export const TokenType = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

/** SentencePiece's stand-in for a space. */
export const SPM_SPACE = '\u2581';

export const UNK_ID = 0;
export const BOS_ID = 1;
export const EOS_ID = 2;
/** Id of the byte-fallback token <0x00>; byte b is BYTE_BASE + b. */
export const BYTE_BASE = 3;
/** Id of the first printable character (the space, spelled ▁). */
export const CHAR_BASE = BYTE_BASE + 256;

export interface Vocabulary {
  tokens: string[];
  scores: number[];
  types: number[];
}

/**
 * An SPM vocabulary with no multi-character pieces, so llama.cpp tokenizes text one character per
 * token (the prompt length in tokens is the length in characters) and anything else through the
 * 256 byte-fallback tokens: <unk> <s> </s>, <0x00>..<0xFF>, then the 95 printable ASCII characters
 * with the space spelled ▁.
 */
export function characterVocabulary(): Vocabulary {
  const tokens = ['<unk>', '<s>', '</s>'];
  const types: number[] = [TokenType.unknown, TokenType.control, TokenType.control];
  const scores = [0, 0, 0];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(TokenType.byte);
    scores.push(0);
  }
  for (let c = 0x20; c <= 0x7e; c++) {
    tokens.push(c === 0x20 ? SPM_SPACE : String.fromCharCode(c));
    types.push(TokenType.normal);
    // SPM scores are log-probabilities; with no pieces to merge they only need to be distinct and < 0.
    scores.push(-1 - (c - 0x20));
  }
  return { tokens, scores, types };
}
