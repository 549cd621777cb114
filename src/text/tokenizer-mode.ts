import { homedir } from 'node:os';
import { charsTokenizer } from './chars-tokenizer.ts';
import { loadHfTokenizer } from './hf-tokenizer.ts';
import { loadPooledHfTokenizer } from './hf-tokenizer-pool.ts';
import type { PromptTokenizer } from './prompt-tokenizer.ts';

/** A `--tokenizer` spec, parsed: `chars`, `backend` or `hf:PATH`. */
export type TokenizerMode =
  | { readonly mode: 'chars' }
  | { readonly mode: 'backend' }
  | { readonly mode: 'hf'; readonly path: string };

/** Parses a tokenizer spec; throws a one-line Error for anything but `chars`, `backend`, `hf:PATH`. */
export function parseTokenizerMode(spec: string): TokenizerMode {
  if (spec === 'chars' || spec === 'backend') return { mode: spec };
  if (spec.startsWith('hf:')) {
    const path = spec.slice(3);
    if (path === '')
      throw new Error('tokenizer hf: needs a path: hf:DIR (holding tokenizer.json) or hf:FILE.json');
    // `hf:~/x` is one shell word, so the shell leaves its ~ alone.
    return { mode: 'hf', path: path === '~' || path.startsWith('~/') ? homedir() + path.slice(1) : path };
  }
  throw new Error(`unknown tokenizer "${spec}": expected chars, backend or hf:PATH`);
}

export interface LocalTokenizerOptions {
  /**
   * `hf:PATH` only: worker threads that encode long prompts off the event loop (default: one per
   * spare core, 1 to 4); 0 encodes every prompt on the event loop.
   */
  readonly threads?: number;
}

/**
 * The tokenizer for a spec that needs no replica: `chars`, or `hf:PATH` (loaded from disk, with a
 * pool of worker threads unless `threads` is 0: call its `close` when done). Returns undefined for
 * `backend`, which the gateway builds itself since it asks a replica's /tokenize. Throws the parse
 * and load errors (one line each).
 */
export async function loadLocalTokenizer(
  spec: string | TokenizerMode,
  options: LocalTokenizerOptions = {},
): Promise<PromptTokenizer | undefined> {
  const mode = typeof spec === 'string' ? parseTokenizerMode(spec) : spec;
  switch (mode.mode) {
    case 'chars':
      return charsTokenizer;
    case 'hf':
      return options.threads === 0
        ? loadHfTokenizer(mode.path)
        : loadPooledHfTokenizer(mode.path, options.threads === undefined ? {} : { threads: options.threads });
    case 'backend':
      return undefined;
  }
}
