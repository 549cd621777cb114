import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Tokens } from '../core/types.ts';
import { type HfPromptTokenizer, loadHfTokenizer } from './hf-tokenizer.ts';
import type { TokenizerThreadData } from './hf-tokenizer-thread.ts';
import type { PromptInput } from './prompt-tokenizer.ts';

/** An hf tokenizer whose long prompts are encoded on worker threads; `close` stops them. */
export interface PooledHfTokenizer extends HfPromptTokenizer {
  /** Threads in the pool. */
  readonly threads: number;
  /** Threads running now: `threads` once started, 0 after `close`. */
  readonly liveThreads: number;
  /** Prompts sent to the threads so far (the others were encoded inline). */
  readonly offloaded: number;
  /** Prompts shorter than this (in characters) are encoded on the calling thread. */
  readonly inlineBelowChars: number;
  close(): Promise<void>;
}

export interface PoolOptions {
  /** Worker threads; default `defaultTokenizerThreads()`. */
  readonly threads?: number;
  /**
   * Prompts (a chat: its messages' roles and contents together) shorter than this stay inline.
   * Default `INLINE_BELOW_CHARS`.
   */
  readonly inlineBelowChars?: number;
  /** Tests only: the path the threads load (default: `path`), so that they can fail alone. */
  readonly threadPath?: string;
}

/**
 * Below this many characters a prompt is encoded on the event loop. Measured with
 * `node --import tsx scripts/tokenizer-pool-threshold.ts` (docs/gateway.md): with the pool idle, a
 * round trip is about as fast as encoding inline at any length and costs the main thread ~0.05 ms,
 * but short prompts sent to a busy pool queue behind long ones (a 256-character prompt behind eight
 * of 10,000 characters: ~35 ms pooled against ~0.2 ms inline). Inline, a prompt under 512 characters
 * holds the event loop for about 0.2-0.4 ms, no longer than a few stream chunks take.
 */
export const INLINE_BELOW_CHARS = 512;

/** One thread per spare core, at least one, at most four. */
export function defaultTokenizerThreads(): number {
  return Math.max(1, Math.min(4, availableParallelism() - 1));
}

const WORKER = fileURLToPath(new URL('./hf-tokenizer-worker.mjs', import.meta.url));

/**
 * `loadHfTokenizer`, with long prompts encoded on a pool of worker threads (piscina) so that the
 * event loop keeps serving streams meanwhile. The file is loaded here first (its errors are thrown
 * here, as `loadHfTokenizer` throws them), then once by each thread as the pool starts them; this
 * resolves once each has encoded a first prompt, and throws (with the pool stopped) if one cannot.
 * Should every thread die later and none be restarted, prompts are encoded inline rather than wait.
 * The threads run until `close`, which the gateway calls when it stops.
 */
export async function loadPooledHfTokenizer(
  path: string,
  options: PoolOptions = {},
): Promise<PooledHfTokenizer> {
  const inline = await loadHfTokenizer(path);
  const threads = options.threads ?? defaultTokenizerThreads();
  if (!Number.isInteger(threads) || threads < 1)
    throw new Error(`tokenizer threads: at least 1, got ${threads}`);
  const inlineBelowChars = options.inlineBelowChars ?? INLINE_BELOW_CHARS;
  const workerData: TokenizerThreadData = { path: options.threadPath ?? path };
  const pool = new Piscina<PromptInput, Tokens>({
    filename: WORKER,
    workerData,
    // All threads start now (each loads the tokenizer once) and stay until close: piscina retires
    // idle threads only above minThreads.
    minThreads: threads,
    maxThreads: threads,
    // Not the main thread's Node flags: its preloads (`--import tsx --import ./test/setup.ts` under
    // the tests) are not the threads' business, and Node 20 threads cannot run a .ts preload anyway.
    // hf-tokenizer-worker.mjs brings tsx itself where it is needed.
    execArgv: [],
  });
  // A thread that fails with no task of its own reports it here; without a listener that would crash
  // the process. Its tasks' callers get the error; with no thread left, tokenize encodes inline.
  pool.on('error', () => {});
  // Initial threads take tasks at once (they queue while the thread loads): one each starts them all.
  const empty: PromptInput = { kind: 'completions', prompt: '' };
  try {
    await Promise.all(Array.from({ length: threads }, () => pool.run(empty)));
  } catch (error) {
    await pool.destroy();
    throw new Error(
      `${inline.name}: tokenizer threads failed to start (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  let closed: Promise<void> | undefined;
  let offloaded = 0;
  return {
    name: inline.name,
    chatTemplateFile: inline.chatTemplateFile,
    render: inline.render,
    threads,
    get liveThreads() {
      return pool.threads.length;
    },
    get offloaded() {
      return offloaded;
    },
    inlineBelowChars,
    async tokenize(input: PromptInput): Promise<Tokens> {
      if (closed !== undefined || promptChars(input) < inlineBelowChars || pool.threads.length === 0)
        return inline.tokenize(input);
      offloaded++;
      return pool.run(input);
    },
    close() {
      closed ??= pool.destroy();
      return closed;
    },
  };
}

/** A prompt's size in characters: a completion's prompt, or a chat's message contents together. */
export function promptChars(input: PromptInput): number {
  if (input.kind === 'completions') return input.prompt.length;
  let n = 0;
  for (const m of input.messages) n += m.content.length + m.role.length;
  return n;
}
