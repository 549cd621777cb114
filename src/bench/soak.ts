import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { Random } from '../core/random.ts';
import { metricValues } from '../gateway/prometheus-text.ts';
import { type PrebleProcess, startPreble } from './preble-process.ts';
import { type SoakOutcome, type SoakRequest, sendSoakRequest } from './soak-client.ts';

export interface SoakOptions {
  readonly seconds: number;
  readonly rps: number;
  readonly replicas: number;
  /** Kill a random replica every this many seconds (SIGKILL), restarting it `downSeconds` later. */
  readonly killEverySeconds: number;
  readonly downSeconds: number;
  readonly seed: number;
  readonly progress?: (line: string) => void;
}

export interface SoakResult {
  readonly sent: number;
  readonly completed: number;
  readonly retried: number;
  /** Well-formed error answers by reason; `client_disconnected` counts the disconnects the soak injected. */
  readonly refused: Record<string, number>;
  /** Requests without exactly one well-formed answer: sent = completed + all refused + lost. */
  readonly lost: number;
  readonly lostExamples: string[];
  readonly kills: number;
  readonly heapStartMB: number;
  readonly heapEndMB: number;
}

const MODEL = 'mistral-7b-a6000';
const KEY = 'soak-client-key-0123456789';

async function gatewayGauge(url: string, name: string): Promise<number> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
  return metricValues(text, [name]).get(name) ?? 0;
}

/** A request of the mix: mostly good (shared prefixes, streamed or not), some broken, some abandoned. */
function nextRequest(random: Random, n: number): SoakRequest {
  const roll = random.next();
  const stream = random.next() < 0.5;
  const prefix = `system prompt ${random.int(0, 7)}: ${'you are a careful assistant. '.repeat(20)}`;
  const good = { model: MODEL, prompt: `${prefix} question ${n}`, max_tokens: 1 + random.int(0, 40), stream };
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${KEY}` };
  const base = { path: '/v1/completions', headers, stream, deadlineMs: 60_000 };
  if (roll < 0.05) return { ...base, body: '{"model": "m", "prompt": ', stream: false };
  if (roll < 0.1) return { ...base, body: JSON.stringify({ ...good, max_tokens: -1 }), stream: false };
  if (roll < 0.13)
    return {
      ...base,
      headers: { ...headers, authorization: 'Bearer wrong-key' },
      body: JSON.stringify(good),
    };
  if (roll < 0.16) return { ...base, body: JSON.stringify({ ...good, model: 'no-such-model' }) };
  if (roll < 0.26) return { ...base, body: JSON.stringify(good), abortAfterMs: random.int(1, 300) };
  return { ...base, body: JSON.stringify(good) };
}

/** Start replica `index` again on its old port (the gateway's config names it by URL). */
async function startEngineOnPort(index: number, port: string, log: (line: string) => void) {
  const args = ['engine', '--port', port, '--time-scale', '20', '--seed', String(index)];
  for (let attempt = 1; ; attempt++) {
    try {
      return await startPreble(args);
    } catch (error) {
      // The freed port may have been taken meanwhile as the local port of an outgoing connection
      // (replicas listen in the ephemeral range); such a socket is short-lived.
      if (attempt >= 10 || !String(error).includes('EADDRINUSE')) throw error;
      log(`replica ${index}: port ${port} is taken, retrying`);
      await sleep(1000);
    }
  }
}

/**
 * A long mixed run against a real gateway process and replica processes: open-loop traffic with
 * bad requests and disconnects, bursts past the admission limit, and replicas killed (SIGKILL)
 * and restarted on their ports. Every request must get exactly one well-formed answer.
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const log = options.progress ?? (() => {});
  const random = new Random(options.seed);
  const engines: PrebleProcess[] = [];
  let gateway: PrebleProcess | undefined;
  const outcomes: Promise<SoakOutcome>[] = [];
  let kills = 0;
  /** Replicas killed and not yet running again, and their pending restarts. */
  const down = new Set<number>();
  const restarts: Promise<void>[] = [];
  let restartFailure: Error | undefined;
  try {
    for (let i = 0; i < options.replicas; i++)
      engines.push(await startPreble(['engine', '--port', '0', '--time-scale', '20', '--seed', String(i)]));
    const dir = mkdtempSync(join(tmpdir(), 'preble-soak-'));
    const config = join(dir, 'gateway.yaml');
    writeFileSync(
      config,
      [
        'port: 0',
        'policy: e2',
        'timeScale: 20',
        'replicas:',
        ...engines.map((e) => `  - ${e.url}`),
        'auth:',
        '  keys:',
        '    - name: soak',
        '      keyEnv: SOAK_KEY',
        'limits:',
        `  maxConcurrent: ${Math.max(8, Math.round(options.rps / 2))}`,
        `  maxQueue: ${Math.max(16, options.rps)}`,
        '  queueTimeoutSeconds: 5',
        'health: { intervalSeconds: 0.5, timeoutSeconds: 1, unhealthyAfter: 1 }',
        'breaker: { failureThreshold: 2, openSeconds: 1 }',
        'retries: { attempts: 2, backoffSeconds: 0.02 }',
        'timeouts: { firstTokenSeconds: 10, idleSeconds: 5, requestSeconds: 30 }',
        '',
      ].join('\n'),
    );
    gateway = await startPreble(['serve', '--config', config, '--process-metrics'], {
      env: { SOAK_KEY: KEY },
    });
    const pool = new Pool(gateway.url, { connections: 256 });
    const send = (r: SoakRequest) => outcomes.push(sendSoakRequest(pool, r));
    for (let i = 0; i < 20; i++) await sendSoakRequest(pool, nextRequest(random, -i)); // warm up
    const heapStart = await gatewayGauge(gateway.url, 'nodejs_heap_size_used_bytes');
    log(
      `gateway ${gateway.url} (pid ${gateway.pid}), ${engines.length} replicas; ${options.seconds} s at ${options.rps} req/s`,
    );
    const start = performance.now();
    let nextKill = options.killEverySeconds;
    let n = 0;
    while ((performance.now() - start) / 1000 < options.seconds) {
      if (restartFailure !== undefined) throw restartFailure;
      const elapsed = (performance.now() - start) / 1000;
      if (elapsed >= nextKill) {
        nextKill += options.killEverySeconds;
        // Only a replica that is up. One still down or starting again (a start is slow on a busy
        // machine) must not be picked: its restart would be scheduled twice, two engines would
        // race for its port, and the loser's EADDRINUSE used to end the run.
        const up = engines.flatMap((_, i) => (down.has(i) ? [] : [i]));
        if (up.length > 0) {
          const victim = up[random.int(0, up.length - 1)]!;
          const port = new URL(engines[victim]!.url).port;
          kills++;
          down.add(victim);
          log(`t=${elapsed.toFixed(1)} s: kill replica ${victim} (pid ${engines[victim]!.pid})`);
          await engines[victim]!.stop('SIGKILL');
          // Handled at once: a failed restart ends the run (above) instead of going unhandled.
          restarts.push(
            sleep(options.downSeconds * 1000)
              .then(() => startEngineOnPort(victim, port, log))
              .then(
                (engine) => {
                  engines[victim] = engine;
                  down.delete(victim);
                  log(`replica ${victim} restarted on port ${port}`);
                },
                (error: unknown) => {
                  restartFailure ??= error instanceof Error ? error : new Error(String(error));
                },
              ),
          );
        }
      }
      // Now and then a burst well past the admission limit.
      const burst = random.next() < 0.01 ? 4 * options.rps : 1;
      for (let k = 0; k < burst; k++) send(nextRequest(random, n++));
      await sleep(random.exponential(options.rps) * 1000);
    }
    await Promise.all(restarts);
    if (restartFailure !== undefined) throw restartFailure;
    const results = await Promise.all(outcomes);
    await sleep(1000);
    const heapEnd = await gatewayGauge(gateway.url, 'nodejs_heap_size_used_bytes');
    const retried = await gatewayGauge(gateway.url, 'preble_retries_total');
    await pool.close();
    const refused: Record<string, number> = {};
    const lostExamples: string[] = [];
    let completed = 0;
    let lost = 0;
    for (const o of results) {
      if (o.kind === 'completed') completed++;
      else if (o.kind === 'aborted')
        refused['client_disconnected'] = (refused['client_disconnected'] ?? 0) + 1;
      else if (o.kind === 'refused') refused[o.reason] = (refused[o.reason] ?? 0) + 1;
      else {
        lost++;
        if (lostExamples.length < 5) lostExamples.push(o.why);
      }
    }
    return {
      sent: results.length,
      completed,
      retried,
      refused,
      lost,
      lostExamples,
      kills,
      heapStartMB: heapStart / 2 ** 20,
      heapEndMB: heapEnd / 2 ** 20,
    };
  } finally {
    await Promise.all(restarts); // never rejects; a replica that starts now is stopped below
    await gateway?.stop();
    await Promise.all(engines.map((e) => e.stop('SIGKILL')));
  }
}
