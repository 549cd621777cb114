import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from './free-port.ts';
import { LlamaProcess } from './llama-process.ts';

export interface LlamaReplicaOptions {
  /** Path of the llama-server binary (see ensureLlamaServer). */
  binary: string;
  /** Path of the GGUF model every replica serves. */
  model: string;
  count: number;
  /** Generation and batch (prompt) threads per replica: -t and -tb. */
  threads?: number;
  /** Concurrent sequences per replica (-np); llama-server's default is "auto" (4, unified KV). */
  slots?: number;
  /** Total KV context per replica (-c); with explicit -np each slot gets ctx/slots. */
  ctx?: number;
  /** Host-RAM prompt cache (--cache-ram, MiB). 0 keeps cache reuse to what the slots hold. */
  cacheRamMiB?: number;
  host?: string;
  /** The model name the server reports (-a); default: the file name. */
  alias?: string;
  /** How long one replica may take to answer /health with 200. */
  startTimeoutMs?: number;
  /**
   * Where every replica saves and restores slots (--slot-save-path): the directory through which
   * the gateway moves a prefilled slot from a prefill to a decode replica. Undefined: off.
   */
  slotSavePath?: string;
  /** More llama-server flags, appended as given. */
  extraArgs?: readonly string[];
  /** Every log line of every replica, with its index. */
  onLog?: (replica: number, line: string) => void;
}

export interface LlamaReplicas {
  /** Base URLs, by replica index (a restarted replica keeps its URL). */
  readonly urls: readonly string[];
  /** Current PIDs, by replica index (a restart changes the replica's PID). */
  readonly pids: readonly number[];
  /** Kill replica `index` at once (SIGKILL by PID), as a crash would. */
  kill(index: number): Promise<void>;
  /** Start replica `index` again on the same port (stopping it first if it runs); resolves once healthy. */
  restart(index: number): Promise<void>;
  /** Stop every replica: SIGTERM by PID, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const BIND_RETRIES = 3;

/**
 * The flags of one replica. Explicit experiment settings rather than llama-server's defaults: the
 * default 8 GiB RAM prompt cache and auto slots/unified KV would change what caching means.
 */
export function llamaServerArgs(options: LlamaReplicaOptions, port: number): string[] {
  const threads = String(options.threads ?? 1);
  const args = [
    '-m',
    options.model,
    '--host',
    options.host ?? '127.0.0.1',
    '--port',
    String(port),
    '-t',
    threads,
    '-tb',
    threads,
    '--cache-ram',
    String(options.cacheRamMiB ?? 0),
    '--metrics',
    '--no-warmup',
  ];
  if (options.slots !== undefined) args.push('-np', String(options.slots));
  if (options.ctx !== undefined) args.push('-c', String(options.ctx));
  if (options.alias !== undefined) args.push('-a', options.alias);
  if (options.slotSavePath !== undefined) args.push('--slot-save-path', options.slotSavePath);
  return [...args, ...(options.extraArgs ?? [])];
}

export function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Start one replica on `port`, or on fresh free ports when someone else grabbed it first. */
export async function startOne(
  options: LlamaReplicaOptions,
  index: number,
  fixedPort: number | undefined,
): Promise<{ proc: LlamaProcess; port: number }> {
  const host = options.host ?? '127.0.0.1';
  for (let attempt = 1; ; attempt++) {
    const port = fixedPort ?? (await freePort(host));
    try {
      const proc = await LlamaProcess.start({
        binary: options.binary,
        args: llamaServerArgs(options, port),
        url: urlOf(host, port),
        startTimeoutMs: options.startTimeoutMs ?? 60_000,
        ...(options.onLog ? { onLog: (line: string) => options.onLog!(index, line) } : {}),
      });
      return { proc, port };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const portTaken = /bind|address already in use/i.test(message);
      if (fixedPort !== undefined || !portTaken || attempt >= BIND_RETRIES)
        throw new Error(`replica ${index}: ${message}`);
    }
  }
}

/** Start `count` llama-server replicas on free ports, each healthy before this resolves. */
export async function startLlamaReplicas(options: LlamaReplicaOptions): Promise<LlamaReplicas> {
  if (!Number.isInteger(options.count) || options.count < 1) throw new Error('count must be at least 1');
  const host = options.host ?? '127.0.0.1';
  const procs: LlamaProcess[] = [];
  const ports: number[] = [];
  try {
    // One at a time: on a small machine parallel model loads only compete for the same cores.
    for (let i = 0; i < options.count; i++) {
      const { proc, port } = await startOne(options, i, undefined);
      procs.push(proc);
      ports.push(port);
    }
  } catch (error) {
    await Promise.all(procs.map((p) => p.stop(2000)));
    throw error;
  }
  const check = (index: number) => {
    if (!Number.isInteger(index) || index < 0 || index >= procs.length)
      throw new Error(`no replica ${index} (there are ${procs.length})`);
  };
  return {
    urls: ports.map((port) => urlOf(host, port)),
    get pids() {
      return procs.map((p) => p.pid);
    },
    async kill(index) {
      check(index);
      await procs[index]!.kill();
    },
    async restart(index) {
      check(index);
      await procs[index]!.stop();
      procs[index] = (await startOne(options, index, ports[index])).proc;
    },
    async stop(graceMs = 5000) {
      await Promise.all(procs.map((p) => p.stop(graceMs)));
    },
  };
}

/** Replicas that all save and restore slots in one directory (the KV hand-off of llama.cpp PD). */
export interface LlamaSharedSlotReplicas extends LlamaReplicas {
  /** The slot directory every replica shares (created when not given, and then removed by stop). */
  readonly slotSavePath: string;
}

/**
 * `count` llama-server replicas with one `--slot-save-path` they all read and write
 * (docs/real-engines.md): a temporary directory unless `slotSavePath` names one.
 */
export async function startLlamaSharedSlotReplicas(
  options: LlamaReplicaOptions,
): Promise<LlamaSharedSlotReplicas> {
  const own = options.slotSavePath === undefined;
  const dir = own ? await mkdtemp(join(tmpdir(), 'preble-slots-')) : resolve(options.slotSavePath!);
  if (!own) await mkdir(dir, { recursive: true });
  let fleet: LlamaReplicas;
  try {
    fleet = await startLlamaReplicas({ ...options, slotSavePath: dir });
  } catch (error) {
    if (own) await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    urls: fleet.urls,
    get pids() {
      return fleet.pids;
    },
    slotSavePath: dir,
    kill: (index) => fleet.kill(index),
    restart: (index) => fleet.restart(index),
    async stop(graceMs) {
      try {
        await fleet.stop(graceMs);
      } finally {
        if (own) await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

export interface LlamaPdOptions extends Omit<LlamaReplicaOptions, 'count'> {
  /** Prefill replicas (started first: indexes 0..prefill-1). */
  prefill: number;
  /** Decode replicas (indexes prefill..prefill+decode-1). */
  decode: number;
}

export interface LlamaPdReplicas extends LlamaSharedSlotReplicas {
  readonly prefillUrls: readonly string[];
  readonly decodeUrls: readonly string[];
}

/**
 * Prefill and decode llama-server replicas for prefill/decode disaggregation: the same model and
 * flags, and one `--slot-save-path` they all share. llama.cpp itself has no roles: the gateway gives
 * them (`preble serve --prefill URL --decode URL --dialect llamacpp`).
 */
export async function startLlamaPdReplicas(options: LlamaPdOptions): Promise<LlamaPdReplicas> {
  const { prefill, decode, ...rest } = options;
  if (!Number.isInteger(prefill) || prefill < 1 || !Number.isInteger(decode) || decode < 1)
    throw new Error('prefill and decode replicas: at least one of each');
  const fleet = await startLlamaSharedSlotReplicas({ ...rest, count: prefill + decode });
  return Object.assign(fleet, {
    prefillUrls: fleet.urls.slice(0, prefill),
    decodeUrls: fleet.urls.slice(prefill),
  });
}
