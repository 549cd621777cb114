// Where the hf tokenizer's pool should take over (src/text/hf-tokenizer-pool.ts, INLINE_BELOW_CHARS).
// 1. For prompts of growing length, one at a time: the latency of an encode and the main thread's busy
//    time per encode, inline (on the event loop) and through a one-thread pool.
// 2. Short prompts sent while long ones keep the pool busy: their latency pooled (they queue behind
//    the long ones) and inline.
//   node --import tsx scripts/tokenizer-pool-threshold.ts [hf-PATH]
import { performance } from 'node:perf_hooks';
import { benchPrompt } from '../src/bench/gateway-load.ts';
import { loadHfTokenizer } from '../src/text/hf-tokenizer.ts';
import { loadPooledHfTokenizer } from '../src/text/hf-tokenizer-pool.ts';
import type { PromptTokenizer } from '../src/text/prompt-tokenizer.ts';

const path = process.argv[2] ?? 'test/fixtures/hf-tokenizer';
const inline = await loadHfTokenizer(path);
const pooled = await loadPooledHfTokenizer(path, { threads: 1, inlineBelowChars: 0 });

/** Mean latency and main-thread busy time per call, in ms, over sequential calls. */
async function measure(t: PromptTokenizer, prompt: string, calls: number) {
  for (let i = 0; i < 20; i++) await t.tokenize({ kind: 'completions', prompt });
  const elu = performance.eventLoopUtilization();
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) await t.tokenize({ kind: 'completions', prompt });
  const wall = performance.now() - t0;
  const busy = performance.eventLoopUtilization(elu).active;
  return { latency: wall / calls, busy: busy / calls };
}

try {
  console.log('chars   inline ms (busy)   pooled ms   pooled busy ms');
  for (const chars of [64, 256, 512, 1024, 2048, 4096, 10_000]) {
    const prompt = benchPrompt(chars);
    const calls = Math.max(50, Math.round(200_000 / chars));
    const a = await measure(inline, prompt, calls);
    const b = await measure(pooled, prompt, calls);
    console.log(
      `${String(chars).padStart(5)}   ${a.latency.toFixed(3).padStart(9)}          ${b.latency.toFixed(3).padStart(9)}   ${b.busy.toFixed(3).padStart(9)}`,
    );
  }
  console.log('\nshort prompts (256 chars) while 8 prompts of 10,000 chars wait for the pool:');
  const long = benchPrompt(10_000);
  const short = benchPrompt(256);
  for (const [label, t] of [
    ['pooled', pooled],
    ['inline', inline],
  ] as const) {
    const latencies: number[] = [];
    for (let round = 0; round < 20; round++) {
      const longs = Array.from({ length: 8 }, () => pooled.tokenize({ kind: 'completions', prompt: long }));
      const t0 = performance.now();
      await t.tokenize({ kind: 'completions', prompt: short });
      latencies.push(performance.now() - t0);
      await Promise.all(longs);
    }
    latencies.sort((x, y) => x - y);
    console.log(`  ${label}: median ${latencies[10]!.toFixed(3)} ms`);
  }
} finally {
  await pooled.close();
}
