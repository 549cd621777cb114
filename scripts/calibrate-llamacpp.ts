/**
 * Calibrates the llamacpp-<preset>-cpu cost model: measures one CPU llama-server replica with the demo's
 * settings (-t/-tb threads, -np 4, -c 16384, --cache-ram 0, --metrics, no warmup) through the server's own
 * `timings`, fits src/core/cost-model/llamacpp-small-cpu.ts's iteration model (llamacpp-fit.ts), and writes
 * the raw samples, the fit and a report (the .md beside the .json).
 *
 *   npx tsx scripts/calibrate-llamacpp.ts --preset small --threads 1 --out docs/results/calibration/llamacpp-small-cpu.json
 *   npx tsx scripts/calibrate-llamacpp.ts --refit --out <json>     (fit and report again from the saved samples)
 *
 * Measured: prefill of unique prompts, prefill of a suffix on a cached prefix (the prefix alone, then prefix +
 * suffix on the same slot), a finer suffix sweep around llama.cpp's 64-row attention tile (reported, not
 * fitted), and decode steps at several contexts with 1-4 requests decoding at once.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { nonNegativeLeastSquares } from '../src/core/cost-model/least-squares.ts';
import {
  type CalibrationFit,
  type CalibrationPoint,
  fitLlamaCppCpu,
  predictPointMs,
} from '../src/core/cost-model/llamacpp-fit.ts';
import { llamaCppCpuCostModel } from '../src/core/cost-model/llamacpp-small-cpu.ts';
import { singleRequestBatch } from '../src/core/cost-model/types.ts';
import { Random } from '../src/core/random.ts';
import { writeGgufModel } from '../src/real/gguf/llama-model.ts';
import { isLlamaPreset } from '../src/real/gguf/presets.ts';
import { ensureLlamaServer } from '../src/real/llama-build.ts';
import { startLlamaReplicas } from '../src/real/replicas.ts';
import { prebleCacheDir } from '../src/util/cache-dir.ts';

const SLOTS = 4;
const CTX = 16_384;
/** Prompt characters (tokens = characters + BOS); lengths mod 64 vary, as llama.cpp's attention tiles care. */
const UNIQUE_SIZES = [40, 100, 200, 300, 500, 700, 1000, 1500, 2000, 2500, 3000, 3500];
const PREFIXES = [250, 1000, 2000, 3000];
const SUFFIXES = [16, 48, 90, 300, 1000];
/** New tokens on a 3,000-character prefix, across the first attention tiles. */
const SAWTOOTH_PREFIX = 3000;
const SAWTOOTH_SUFFIXES = [8, 24, 40, 56, 63, 64, 72, 96, 128, 160, 192, 256];
const DECODE_CONTEXTS = [100, 500, 1000, 2000, 3000, 3500];
const DECODE_TOKENS = 48;
/** A sample is clean when the server's threads waited for a core less than this share of its wall time. */
const CLEAN_WAIT_SHARE = 0.05;
/** A point gets more repeats while it has fewer clean samples than asked, or they spread more than this. */
const SPREAD_LIMIT = 0.15;
const MAX_EXTRA_ROUNDS = 4;

type Group = 'unique' | 'suffix' | 'sawtooth' | 'decode';
type Phase = Group | 'warmup' | 'prefix' | 'slot-fill';

export interface Sample {
  phase: Phase;
  /** Requested sizes in characters: prompt (unique), prefix and suffix, or decode context and concurrency. */
  target: { prompt?: number; prefix?: number; suffix?: number; context?: number; concurrency?: number };
  slot: number;
  promptN: number;
  cacheN: number;
  promptMs: number;
  predictedN: number;
  predictedMs: number;
  /** Seconds since the run started, and the 1-minute load average then. */
  atS: number;
  load1: number;
  /** The server's threads: time on a CPU, and time runnable but waiting for one, over wall time. */
  runShare: number;
  waitShare: number;
}

export type MeasuredPoint = CalibrationPoint & { group: Group; cleanSamples: number };

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const spread = (values: readonly number[]) => (Math.max(...values) - Math.min(...values)) / median(values);
const isClean = (s: Sample) => s.waitShare < CLEAN_WAIT_SHARE;
/** The time a sample measures: prompt_ms, or ms per decode step. */
const sampleMs = (s: Sample) => (s.phase === 'decode' ? s.predictedMs / (s.predictedN - 1) : s.promptMs);

/** Medians per measured configuration, over the clean samples when there are two or more. */
export function pointsFromSamples(samples: readonly Sample[]): MeasuredPoint[] {
  const groups = new Map<string, Sample[]>();
  for (const s of samples) {
    if (s.phase !== 'unique' && s.phase !== 'suffix' && s.phase !== 'sawtooth' && s.phase !== 'decode')
      continue;
    const key = JSON.stringify([s.phase, s.target]);
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  return [...groups.values()].map((all): MeasuredPoint => {
    const clean = all.filter(isClean);
    const used = clean.length >= 2 ? clean : all;
    const values = used.map(sampleMs);
    const first = all[0]!;
    const common = {
      group: first.phase as Group,
      cleanSamples: clean.length,
      ms: median(values),
      samples: values,
    };
    if (first.phase === 'decode') {
      return {
        kind: 'decode',
        requests: first.target.concurrency!,
        contextTokens: median(used.map((s) => s.cacheN + s.promptN)),
        steps: median(used.map((s) => s.predictedN - 1)),
        ...common,
      };
    }
    return {
      kind: 'prefill',
      newTokens: median(used.map((s) => s.promptN)),
      cachedTokens: median(used.map((s) => s.cacheN)),
      ...common,
    };
  });
}

/** The GPU presets' form (attention = one coefficient x newTimesSeq), fitted the same way, for comparison. */
function plainFormErrors(points: readonly CalibrationPoint[]): { maxRelError: number; meanRelError: number } {
  const terms = (b: ReturnType<typeof singleRequestBatch>) => [
    1,
    b.newTokens,
    b.seqTokens,
    b.newTimesSeq,
    b.requests,
  ];
  const decodeBatch = (p: CalibrationPoint & { kind: 'decode' }, i: number) => {
    const seq = p.requests * (p.contextTokens + i + 1);
    return { requests: p.requests, newTokens: p.requests, seqTokens: seq, newTimesSeq: seq };
  };
  const batches = (p: CalibrationPoint) =>
    p.kind === 'prefill'
      ? [singleRequestBatch(p.newTokens, p.cachedTokens)]
      : Array.from({ length: p.steps }, (_, i) => decodeBatch(p, i));
  const rows = points.map((p) => {
    const bs = batches(p);
    const sums = bs.map(terms).reduce((acc, t) => acc.map((v, i) => v + t[i]!));
    return sums.map((v) => v / bs.length / (p.ms * 1e-3));
  });
  const x = nonNegativeLeastSquares(
    rows,
    rows.map(() => 1),
  );
  const errors = rows.map((row) => Math.abs(row.reduce((s, v, i) => s + v * x[i]!, 0) - 1));
  return {
    maxRelError: Math.max(...errors),
    meanRelError: errors.reduce((s, e) => s + e, 0) / errors.length,
  };
}

// ---------------------------------------------------------------------------------------------- measuring

const readLoad = (): number[] => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);

/** Nanoseconds all threads of a process ran and waited runnable for a CPU (/proc/<pid>/task/<tid>/schedstat). */
function schedstat(pid: number): { run: number; wait: number } {
  let run = 0;
  let wait = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const [r, w] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      run += r!;
      wait += w!;
    } catch {
      // the thread exited meanwhile
    }
  }
  return { run, wait };
}

/** Cores busy machine-wide over `ms` (call while our server is idle: that is other people's load). */
async function busyCores(ms = 500): Promise<number> {
  const read = () => {
    const n = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    return { idle: n[3]! + n[4]!, total: n.reduce((s, x) => s + x, 0) };
  };
  const a = read();
  await sleep(ms);
  const b = read();
  return (1 - (b.idle - a.idle) / Math.max(1, b.total - a.total)) * cpus().length;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** Prompt text: a two-character tag unique among the last 3,844 prompts (no cache hit past BOS), then random. */
class Prompts {
  private readonly random = new Random(20_260_601);
  private count = 0;
  text(chars: number): string {
    const id = this.count++;
    let text = ALPHABET[id % 62]! + ALPHABET[Math.floor(id / 62) % 62]!;
    while (text.length < chars) text += ALPHABET[this.random.int(0, ALPHABET.length - 1)];
    return text.slice(0, chars);
  }
}

interface Timings {
  prompt_n: number;
  cache_n: number;
  prompt_ms: number;
  predicted_n: number;
  predicted_ms: number;
}

interface Request {
  prompt: string;
  slot: number;
  maxTokens: number;
  cachePrompt: boolean;
}

class Client {
  readonly samples: Sample[] = [];
  private readonly started = Date.now();
  constructor(
    private readonly url: string,
    private readonly pid: number,
  ) {}

  private async complete(r: Request): Promise<Timings> {
    const res = await fetch(`${this.url}/completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        prompt: r.prompt,
        id_slot: r.slot,
        n_predict: r.maxTokens,
        cache_prompt: r.cachePrompt,
        temperature: 0,
        ignore_eos: true,
      }),
    });
    const json = (await res.json()) as { timings?: Timings };
    if (!res.ok || json.timings === undefined)
      throw new Error(`llama-server answered ${res.status}: ${JSON.stringify(json).slice(0, 300)}`);
    return json.timings;
  }

  /** Send the requests at once (one per slot); one sample each. */
  async run(phase: Phase, target: Sample['target'], requests: Request[]): Promise<Sample[]> {
    const before = schedstat(this.pid);
    const wallBefore = process.hrtime.bigint();
    const timings = await Promise.all(requests.map((r) => this.complete(r)));
    const wallNs = Number(process.hrtime.bigint() - wallBefore);
    const after = schedstat(this.pid);
    const load1 = readLoad()[0]!;
    const made = timings.map(
      (t, i): Sample => ({
        phase,
        target,
        slot: requests[i]!.slot,
        promptN: t.prompt_n,
        cacheN: t.cache_n,
        promptMs: t.prompt_ms,
        predictedN: t.predicted_n,
        predictedMs: t.predicted_ms,
        atS: (Date.now() - this.started) / 1e3,
        load1,
        runShare: (after.run - before.run) / wallNs,
        waitShare: (after.wait - before.wait) / wallNs,
      }),
    );
    this.samples.push(...made);
    return made;
  }
}

/**
 * Measure each key round-robin `repeats` times (a burst of someone else's load then hits every size alike),
 * then again for keys where a sub-point (a measure returns one sample per sub-point) has fewer clean samples
 * than `repeats`, or clean samples that spread too much.
 */
async function repeatRounds<K>(
  keys: readonly K[],
  repeats: number,
  measure: (key: K) => Promise<Sample[]>,
  log: (line: string) => void,
  label: (key: K) => string,
): Promise<void> {
  const runs = new Map<K, Sample[][]>(keys.map((k) => [k, []]));
  for (let round = 0; round < repeats; round++) {
    for (const key of keys) runs.get(key)!.push(await measure(key));
  }
  const needsMore = (key: K) => {
    const list = runs.get(key)!;
    return list[0]!.some((_, i) => {
      const clean = list.map((run) => run[i]!).filter(isClean);
      return clean.length < repeats || spread(clean.map(sampleMs)) > SPREAD_LIMIT;
    });
  };
  for (let extra = 0; extra < MAX_EXTRA_ROUNDS; extra++) {
    const noisy = keys.filter(needsMore);
    if (noisy.length === 0) return;
    log(`repeating ${noisy.map(label).join(', ')} (waited for a core, or spread > ${100 * SPREAD_LIMIT}%)`);
    await sleep(1000);
    for (const key of noisy) runs.get(key)!.push(await measure(key));
  }
}

async function modelFile(preset: string, seed: number): Promise<string> {
  if (!isLlamaPreset(preset)) throw new Error(`unknown model preset ${preset}`);
  const path = join(prebleCacheDir(), 'models', `${preset}-seed${seed}.gguf`);
  if (!existsSync(path)) {
    await mkdir(dirname(path), { recursive: true });
    await writeGgufModel({ preset, seed, path });
  }
  return path;
}

interface RunInfo {
  command: string;
  settings: { preset: string; seed: number; threads: number; slots: number; ctx: number; repeats: number };
  machine: {
    cpu: string;
    cores: number;
    loadavgStart: number[];
    loadavgEnd: number[];
    busyCoresStart: number;
  };
  startedAt: string;
  durationS: number;
}

async function measure(
  preset: string,
  threads: number,
  repeats: number,
  log: (line: string) => void,
): Promise<{ info: Omit<RunInfo, 'command'>; samples: Sample[] }> {
  const started = Date.now();
  const model = await modelFile(preset, 0);
  const binary = await ensureLlamaServer({ onProgress: log });
  const busyCoresStart = await busyCores(1000);
  const loadavgStart = readLoad();
  log(
    `load average ${loadavgStart.join(' ')}, ${busyCoresStart.toFixed(2)} cores busy; starting llama-server`,
  );
  const fleet = await startLlamaReplicas({
    binary,
    model,
    count: 1,
    threads,
    slots: SLOTS,
    ctx: CTX,
    cacheRamMiB: 0,
  });
  const client = new Client(fleet.urls[0]!, fleet.pids[0]!);
  const prompts = new Prompts();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
  const one = (prompt: string, slot: number, maxTokens: number, cachePrompt: boolean) => [
    { prompt, slot, maxTokens, cachePrompt },
  ];
  try {
    // Page the weights in and let the allocator settle before anything counts.
    for (const n of [512, 2048]) await client.run('warmup', { prompt: n }, one(prompts.text(n), 0, 8, false));

    log(`unique prefill (${elapsed()})`);
    await repeatRounds(
      UNIQUE_SIZES,
      repeats,
      (n) => client.run('unique', { prompt: n }, one(prompts.text(n), 0, 1, false)),
      log,
      (n) => `unique ${n}`,
    );

    // The prefix alone, then each suffix on it; a suffix starts with its own tag, so the next one reuses
    // exactly the prefix.
    const suffixesOn = async (group: 'suffix' | 'sawtooth', prefix: number, suffixes: readonly number[]) => {
      const head = prompts.text(prefix);
      await client.run('prefix', { prefix }, one(head, 1, 1, true));
      const made: Sample[] = [];
      for (const suffix of suffixes) {
        const [s] = await client.run(group, { prefix, suffix }, one(head + prompts.text(suffix), 1, 1, true));
        if (s!.cacheN < prefix) log(`warning: prefix ${prefix} + ${suffix}: only ${s!.cacheN} cached`);
        made.push(s!);
      }
      return made;
    };
    log(`suffix on a cached prefix (${elapsed()})`);
    await repeatRounds(
      PREFIXES,
      repeats,
      (p) => suffixesOn('suffix', p, SUFFIXES),
      log,
      (p) => `prefix ${p}`,
    );
    log(`suffix sweep on ${SAWTOOTH_PREFIX} cached (${elapsed()})`);
    await repeatRounds(
      [SAWTOOTH_PREFIX],
      repeats,
      (p) => suffixesOn('sawtooth', p, SAWTOOTH_SUFFIXES),
      log,
      () => 'sweep',
    );

    log(`decode (${elapsed()})`);
    for (const context of DECODE_CONTEXTS) {
      // Every slot holds the same prompt, so the concurrent requests prefill one token each and decode together.
      const prompt = prompts.text(context);
      for (let slot = 0; slot < SLOTS; slot++)
        await client.run('slot-fill', { context }, one(prompt, slot, 1, true));
      await repeatRounds(
        [1, 2, 3, 4],
        repeats,
        (r) =>
          client.run(
            'decode',
            { context, concurrency: r },
            Array.from({ length: r }, (_, slot) => ({
              prompt,
              slot,
              maxTokens: DECODE_TOKENS,
              cachePrompt: true,
            })),
          ),
        log,
        (r) => `decode ${context} x ${r}`,
      );
      log(`  context ${context} done (${elapsed()})`);
    }
  } finally {
    await fleet.stop();
  }
  return {
    info: {
      settings: { preset, seed: 0, threads, slots: SLOTS, ctx: CTX, repeats },
      machine: {
        cpu: cpus()[0]?.model ?? 'unknown',
        cores: cpus().length,
        loadavgStart,
        loadavgEnd: readLoad(),
        busyCoresStart,
      },
      startedAt: new Date(started).toISOString(),
      durationS: (Date.now() - started) / 1000,
    },
    samples: client.samples,
  };
}

// ---------------------------------------------------------------------------------------------- report

const f = (v: number, digits = 1) => v.toFixed(digits);
const pct = (v: number) => `${v >= 0 ? '+' : ''}${(100 * v).toFixed(1)}%`;
const mean = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
/** A point with the cost model's prediction, and llama.cpp's mechanism's (they differ at the 64-row cliff). */
export type Scored = MeasuredPoint & { predictedMs: number; relError: number; mechanismRelError: number };

function prefillTable(points: readonly Scored[]): string[] {
  return [
    '| new tokens | cached | measured ms (median) | clean / samples | preset ms | preset error | mechanism error |',
    '|---:|---:|---:|---:|---:|---:|---:|',
    ...points.flatMap((p) =>
      p.kind === 'prefill'
        ? [
            `| ${p.newTokens} | ${p.cachedTokens} | ${f(p.ms)} | ${p.cleanSamples} / ${p.samples.length} | ${f(p.predictedMs)} | ${pct(p.relError)} | ${pct(p.mechanismRelError)} |`,
          ]
        : [],
    ),
  ];
}

function report(
  info: RunInfo,
  samples: readonly Sample[],
  scored: readonly Scored[],
  fit: CalibrationFit,
): string {
  const c = fit.coefficients;
  const plain = plainFormErrors(scored);
  const measured = samples.filter((s) => ['unique', 'suffix', 'sawtooth', 'decode'].includes(s.phase));
  const loads = measured.map((s) => s.load1);
  const waits = measured.map((s) => s.waitShare);
  const awayFromCliff = scored.filter((p) => Math.abs(p.relError - p.mechanismRelError) < 1e-9);
  const away = awayFromCliff.map((p) => Math.abs(p.relError));
  const decode = scored.filter((p) => p.kind === 'decode');
  const step = (r: number, ctx: number) =>
    decode.find((p) => p.kind === 'decode' && p.requests === r && p.contextTokens === ctx + 1)?.ms;
  const sweepMs = (n: number) =>
    scored.find((p) => p.group === 'sawtooth' && p.kind === 'prefill' && p.newTokens === n)?.ms;
  const lines = [
    '# Calibration: llamacpp-small-cpu',
    '',
    'Cost-model preset `llamacpp-small-cpu` (src/core/cost-model/llamacpp-small-cpu.ts), fitted to one CPU',
    'llama.cpp replica serving the random-weight `small` GGUF (6 layers, 512 wide, 18M parameters, Q8_0).',
    '',
    '```sh',
    info.command,
    '```',
    '',
    'Raw samples, medians and the fit: [llamacpp-small-cpu.json](llamacpp-small-cpu.json). Run started',
    `${info.startedAt} and took ${f(info.durationS, 0)} s, server start included.`,
    '`--refit` redoes the fit and this report from the JSON without measuring.',
    '',
    '## Setup',
    '',
    '- Server: llama-server built by ensureLlamaServer (llama.cpp of node-llama-cpp 3.22.1), started by',
    `  startLlamaReplicas: \`-t ${info.settings.threads} -tb ${info.settings.threads} -np ${SLOTS} -c ${CTX} --cache-ram 0 --metrics --no-warmup\`;`,
    '  defaults otherwise (batch 2048, ubatch 512, flash attention auto, which is on for CPU).',
    `- Machine: ${info.machine.cpu}, ${info.machine.cores} cores, **shared with another engineer running test suites**;`,
    '  other processes may run (see the load and waits below). /proc/loadavg at the start',
    `  ${info.machine.loadavgStart.join(' ')} (${f(info.machine.busyCoresStart, 2)} cores busy before our server started), at the end`,
    `  ${info.machine.loadavgEnd.join(' ')}; 1-minute load over the measured requests ${f(Math.min(...loads), 2)} to`,
    `  ${f(Math.max(...loads), 2)}, median ${f(median(loads), 2)} (our server adds about 1 while it computes).`,
    "- Contention check per request: the server threads' time runnable but waiting for a core",
    `  (/proc/<pid>/task/*/schedstat) over wall time; median ${pct(median(waits))}, max ${pct(Math.max(...waits))}.`,
    `  Samples under ${100 * CLEAN_WAIT_SHARE}% are clean; a point is the median of its clean samples when it has two or`,
    '  more (of all samples otherwise). Points with fewer clean samples than repeats, or clean samples spread',
    `  over ${100 * SPREAD_LIMIT}%, were measured again (up to ${MAX_EXTRA_ROUNDS} more rounds).`,
    "- Times are the server's own `timings`: `prompt_ms` for prefill, `predicted_ms / (predicted_n - 1)` per",
    '  decode step (the first token comes out of the prefill). Temperature 0, `ignore_eos`, repeats taken',
    `  round-robin over the sizes, ${info.settings.repeats} or more per point.`,
    '- Prefill: unique prompts (`cache_prompt: false`, each starting with its own two characters); suffixes on',
    '  a cached prefix (the prefix alone, then prefix + suffix on the same slot, `cache_prompt: true`); a',
    `  finer sweep of suffixes on ${SAWTOOTH_PREFIX} cached characters across the first attention tiles.`,
    `- Decode: all 4 slots first hold the same prompt; then 1-4 requests (\`n_predict\` ${DECODE_TOKENS}) go at once to`,
    '  slots 0..r-1, prefill one token each and decode together.',
    '',
    '## Fitted model (seconds)',
    '',
    '```',
    'iteration = perIteration + perNewToken * newTokens + perContextToken * seqTokens + perRequest * requests',
    '          + perTiledPair * tiledPairs + perRowPair * rowPairs',
    '```',
    '',
    'Pairs are query-key pairs, counted causally (n new tokens on c cached: n*c + n(n+1)/2). This is',
    "llama.cpp's mechanism: a prefill runs in micro-batches of 512 tokens; CPU flash attention computes a",
    'micro-batch of 64 rows or more in 64-row tiles (tiledPairs, the last tile padded) and a smaller one row',
    'by row (rowPairs), as it does every decode row. Row by row a pair costs several times as much, so 63 new',
    'tokens take longer than 64. The preset must be monotone: for one micro-batch, below 64 rows it charges at',
    'most, and from 64 rows at least, the geometric mean of the 63-row and 64-row attention costs ("preset"',
    'below). The "mechanism" column is llama.cpp\'s own rule with the same coefficients.',
    '',
    '| coefficient | value (s) | |',
    '|---|---|---|',
    `| perIteration | ${c.perIteration.toExponential(4)} | ${f(c.perIteration * 1e3, 3)} ms |`,
    `| perNewToken | ${c.perNewToken.toExponential(4)} | ${f(c.perNewToken * 1e3, 3)} ms per token computed |`,
    `| perContextToken | ${c.perContextToken.toExponential(4)} | ${f(c.perContextToken * 1e9, 0)} ns per sequence token per iteration |`,
    `| perTiledPair | ${c.perTiledPair.toExponential(4)} | ${f(c.perTiledPair * 1e9, 0)} ns per pair |`,
    `| perRowPair | ${c.perRowPair.toExponential(4)} | ${f(c.perRowPair * 1e9, 0)} ns per pair |`,
    `| perRequest | ${c.perRequest.toExponential(4)} | ${f(c.perRequest * 1e3, 3)} ms per request per iteration |`,
    '',
    `Non-negative least squares on relative error over all ${scored.length} points. Relative error:`,
    '',
    '| | max | mean |',
    '|---|---:|---:|',
    `| **preset**, all points | **${f(100 * fit.model.maxRelError)}%** | **${f(100 * fit.model.meanRelError)}%** |`,
    `| preset, the ${away.length} points where the cliff rule does not bind | ${f(100 * Math.max(...away))}% | ${f(100 * mean(away))}% |`,
    `| llama.cpp's mechanism (not monotone) | ${f(100 * fit.mechanism.maxRelError)}% | ${f(100 * fit.mechanism.meanRelError)}% |`,
    `| the GPU presets' form, a + b newTokens + c seqTokens + d newTimesSeq + e requests, fitted the same way | ${f(100 * plain.maxRelError)}% | ${f(100 * plain.meanRelError)}% |`,
    '',
    '## Prefill: measured vs `prefillTime(new, cached)`',
    '',
    ...prefillTable(scored.filter((p) => p.group === 'unique' || p.group === 'suffix')),
    '',
    `## Suffix sweep on ${SAWTOOTH_PREFIX + 1} cached tokens`,
    '',
    ...prefillTable(scored.filter((p) => p.group === 'sawtooth')),
    '',
    '## Decode: ms per step, measured vs predicted',
    '',
    '| prompt tokens | requests decoding | measured ms/step (median) | clean / samples | preset | error |',
    '|---:|---:|---:|---:|---:|---:|',
    ...decode.flatMap((p) =>
      p.kind === 'decode'
        ? [
            `| ${p.contextTokens} | ${p.requests} | ${f(p.ms, 2)} | ${p.cleanSamples} / ${p.samples.length} | ${f(p.predictedMs, 2)} | ${pct(p.relError)} |`,
          ]
        : [],
    ),
    '',
    '## Observations',
    '',
  ];
  const s1 = step(1, 100);
  const s2 = step(2, 100);
  const s4 = step(4, 100);
  const l1 = step(1, 3500);
  const l4 = step(4, 3500);
  if (s1 && s2 && s4 && l1 && l4) {
    lines.push(
      `- Batching saves nothing on one CPU thread: a decode step of 4 requests costs ${f(s4 / s1, 2)}x one request's at`,
      `  context 100 and ${f(l4 / l1, 2)}x at 3,500 (2 requests: ${f(s2 / s1, 2)}x at 100). On a GPU it is close to 1x, a step`,
      '  being bound by reading the weights; here every row pays its own linear layers and its own attention.',
    );
  }
  if (s1 && l1) {
    lines.push(
      `- Context dominates decode: one step takes ${f(s1, 2)} ms at context 100 and ${f(l1, 2)} ms at 3,500; a context`,
      `  token costs ${f((c.perContextToken + c.perRowPair) * 1e9, 0)} ns per decode step, against ${f(c.perTiledPair * 1e9, 0)} ns per tiled prefill pair.`,
    );
  }
  const unique = (n: number) =>
    scored.find((p) => p.group === 'unique' && p.kind === 'prefill' && p.newTokens === n);
  const u501 = unique(501);
  const u3501 = unique(3501);
  if (u501 && u3501) {
    lines.push(
      `- Prefill is not linear in length: ${f(u501.ms / 501, 2)} ms per token for 501 uncached tokens, ${f(u3501.ms / 3501, 2)} for 3,501;`,
      `  attention is ${f((100 * c.perTiledPair * (3501 * 3502)) / 2 / (u3501.ms * 1e-3), 0)}% of the latter by the fit.`,
    );
  }
  const m63 = sweepMs(63);
  const m64 = sweepMs(64);
  if (m63 && m64) {
    lines.push(
      `- Prefill time falls at 64 new tokens: 63 on ${SAWTOOTH_PREFIX + 1} cached take ${f(m63, 0)} ms, 64 take ${f(m64, 0)} ms.`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** Fit every point; score it with the preset and with llama.cpp's mechanism. */
export function scorePoints(points: readonly MeasuredPoint[]): { fit: CalibrationFit; scored: Scored[] } {
  const fit = fitLlamaCppCpu(points);
  const model = llamaCppCpuCostModel('fit', fit.coefficients, { kvBytesPerToken: 0, kvCapacityTokens: 0 });
  const scored = points.map((p, i) => {
    const predictedMs = predictPointMs(model.iterationTime, p);
    return {
      ...p,
      predictedMs,
      relError: (predictedMs - p.ms) / p.ms,
      mechanismRelError: fit.mechanism.relErrors[i]!,
    };
  });
  return { fit, scored };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      preset: { type: 'string', default: 'small' },
      threads: { type: 'string', default: '1' },
      repeats: { type: 'string', default: '3' },
      out: { type: 'string', default: 'docs/results/calibration/llamacpp-small-cpu.json' },
      refit: { type: 'boolean', default: false },
    },
  });
  const out = resolve(values.out!);
  const log = (line: string) => process.stderr.write(`calibrate: ${line}\n`);
  let info: RunInfo;
  let samples: Sample[];
  if (values.refit) {
    const { samples: saved, fit: _old, ...savedInfo } = JSON.parse(readFileSync(out, 'utf8'));
    info = savedInfo;
    samples = saved;
  } else {
    const measured = await measure(values.preset!, Number(values.threads), Number(values.repeats), log);
    const command = `npx tsx scripts/calibrate-llamacpp.ts --preset ${values.preset} --threads ${values.threads} --out ${values.out}`;
    info = { command, ...measured.info };
    samples = measured.samples;
  }
  const { fit, scored } = scorePoints(pointsFromSamples(samples));
  const json = {
    ...info,
    fit: {
      coefficients: fit.coefficients,
      maxRelError: fit.model.maxRelError,
      meanRelError: fit.model.meanRelError,
      mechanism: { maxRelError: fit.mechanism.maxRelError, meanRelError: fit.mechanism.meanRelError },
      plainForm: plainFormErrors(scored),
      points: scored,
    },
    samples,
  };
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(json, null, 1)}\n`);
  const md = out.replace(/\.json$/, '.md');
  await writeFile(md, report(info, samples, scored, fit));
  log(`wrote ${out} and ${md}`);
  log(`coefficients (s): ${JSON.stringify(fit.coefficients)}`);
  log(
    `preset: max relative error ${f(100 * fit.model.maxRelError)}%, mean ${f(100 * fit.model.meanRelError)}%`,
  );
}

// Run only when invoked as a script, so tests can import pointsFromSamples.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
