import { workerData } from 'node:worker_threads';
import { move } from 'piscina';
import { loadHfTokenizer } from './hf-tokenizer.ts';
import type { PromptInput } from './prompt-tokenizer.ts';

/** What the pool gives each tokenizer thread (as `workerData`). */
export interface TokenizerThreadData {
  /** The `hf:PATH` path, as the main thread loaded it. */
  readonly path: string;
}

// Loaded once per thread, when the pool starts it; every task reuses it.
const tokenizer = await loadHfTokenizer((workerData as TokenizerThreadData).path);

/** One pool task: a prompt's token ids, their buffer moved (not copied) back to the main thread. */
export default async function tokenize(input: PromptInput): Promise<unknown> {
  return move(await tokenizer.tokenize(input));
}
