import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { KvLink } from '../core/fleet/kv-link.ts';
import { transferSeconds } from '../core/fleet/kv-link.ts';
import type { EngineKvReady } from '../engine/types.ts';
import type { WallClockDriver } from './driver.ts';
import { errorBody, HttpError } from './errors.ts';

/**
 * Prefill/decode disaggregation in `preble engine`, vLLM-style (its NixlConnector's
 * `kv_transfer_params`; docs/gateway.md, "Prefill/decode disaggregation"):
 * - a prefill-role engine takes a request with `kv_transfer_params: {do_remote_decode: true}`, runs
 *   its prompt to the first token (the engine's prefill-only path), holds the KV and answers with
 *   `kv_transfer_params: {do_remote_prefill: true, remote_engine_id, remote_request_id,
 *   remote_block_ids, remote_host, remote_port, tp_size}`;
 * - a decode-role engine takes the same request with those params, pulls the KV from the prefill
 *   engine (`POST http://remote_host:remote_port/_preble/kv/<remote_request_id>/pull`, which hands the
 *   held KV over and frees it there: NIXL's read and its completion notice in one call), waits the
 *   transfer time of the KV over its link (src/core/fleet/kv-link.ts) and adopts the request
 *   (`Engine.adopt`): it reports the whole prompt as cached and computes none of it.
 * KV that nobody pulls is released after `holdSeconds` (vLLM: VLLM_NIXL_ABORT_REQUEST_TIMEOUT).
 *
 * And SGLang-style (its router's PD mode, `sglang.srt.disaggregation.mini_lb`): the same request,
 * with `bootstrap_host`, `bootstrap_port` (the prefill engine's bootstrap server) and a random
 * `bootstrap_room`, goes to the prefill and the decode engine together. Here the bootstrap server is
 * the engine's HTTP port (`GET /get_server_info` says `disaggregation_bootstrap_port`, as SGLang's
 * does): the prefill engine holds the KV under the room, and the decode engine pulls it with
 * `POST http://bootstrap_host:bootstrap_port/_preble/kv/room/<room>/pull`, which waits for the
 * prefill to get there (the two requests race), then adopts it as above.
 */

/** SGLang's PD fields of a request. */
export const bootstrapSchema = {
  bootstrap_host: z.string().nullish(),
  bootstrap_port: z.number().int().min(1).max(65535).nullish(),
  bootstrap_room: z.number().int().min(0).nullish(),
};

export interface Bootstrap {
  readonly host: string;
  readonly port: number;
  readonly room: number;
}

/** The bootstrap fields of a request, when it has a room (host and port default to this engine's). */
export function bootstrapOf(body: {
  bootstrap_host?: string | null | undefined;
  bootstrap_port?: number | null | undefined;
  bootstrap_room?: number | null | undefined;
}): Bootstrap | undefined {
  if (body.bootstrap_room == null) return undefined;
  return {
    host: body.bootstrap_host ?? '127.0.0.1',
    port: body.bootstrap_port ?? 0,
    room: body.bootstrap_room,
  };
}

/** The `kv_transfer_params` of a request or a prefill's answer (unknown fields pass through). */
export const kvTransferParamsSchema = z
  .object({
    do_remote_decode: z.boolean().nullish(),
    do_remote_prefill: z.boolean().nullish(),
    remote_engine_id: z.string().nullish(),
    remote_request_id: z.string().nullish(),
    remote_block_ids: z.array(z.unknown()).nullish(),
    remote_host: z.string().nullish(),
    remote_port: z.number().int().min(1).max(65535).nullish(),
    tp_size: z.number().nullish(),
  })
  .passthrough()
  .nullish();
export type KvTransferParams = NonNullable<z.infer<typeof kvTransferParamsSchema>>;

/** Tokens per KV block in the params' `remote_block_ids` (vLLM's default block size). */
const BLOCK_TOKENS = 16;

/** What the decode side learns when it pulls a held KV. */
export interface PulledKv {
  readonly remote_engine_id: string;
  readonly prompt_tokens: number;
  readonly kv_tokens: number;
  readonly generated: number;
}

interface Held {
  readonly kv: EngineKvReady;
  readonly timer: NodeJS.Timeout;
}

/** The prefill side: KV held for the decode side, pulled once or released after a timeout. */
export class KvHolder {
  readonly engineId = `preble-${randomUUID()}`;
  private readonly held = new Map<string, Held>();
  /** Decode engines waiting for a room's KV (the SGLang-style legs race). */
  private readonly waiting = new Map<string, Set<() => void>>();
  /** Where the decode side pulls from: the server's bound address, set once it listens. */
  address: { host: string; port: number } | undefined;

  constructor(
    private readonly driver: WallClockDriver,
    private readonly holdSeconds: number,
  ) {}

  /** Requests whose KV is held now. */
  get size(): number {
    return this.held.size;
  }

  /** Hold a prefill leg's KV and say where to pull it from. */
  hold(kv: EngineKvReady): KvTransferParams {
    const timer = setTimeout(() => this.release(kv.id), this.holdSeconds * 1000);
    timer.unref();
    this.held.set(kv.id, { kv, timer });
    return {
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_engine_id: this.engineId,
      remote_request_id: kv.id,
      remote_block_ids: Array.from({ length: Math.ceil(kv.kvTokens / BLOCK_TOKENS) }, (_, i) => i),
      remote_host: this.address?.host ?? '127.0.0.1',
      remote_port: this.address?.port ?? null,
      tp_size: 1,
    };
  }

  /** Hold a prefill leg's KV under an SGLang bootstrap room (nothing to name in the answer). */
  holdRoom(room: number, kv: EngineKvReady): undefined {
    const key = roomKey(room);
    const timer = setTimeout(() => this.release(key), this.holdSeconds * 1000);
    timer.unref();
    this.held.set(key, { kv, timer });
    for (const wake of this.waiting.get(key) ?? []) wake();
    return undefined;
  }

  /** The decode side takes a room's KV, waiting up to `waitMs` for its prefill to get there. */
  async takeRoom(room: number, waitMs: number, signal: AbortSignal): Promise<PulledKv | undefined> {
    const key = roomKey(room);
    if (!this.held.has(key)) {
      let wake = () => {};
      const arrived = new Promise<void>((resolve) => {
        wake = resolve;
      });
      const set = this.waiting.get(key) ?? new Set();
      set.add(wake);
      this.waiting.set(key, set);
      const timer = setTimeout(wake, waitMs);
      const onAbort = () => wake();
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        await arrived;
      } finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        set.delete(wake);
        if (set.size === 0) this.waiting.delete(key);
      }
    }
    return this.take(key);
  }

  /** The decode side takes the KV: it leaves this engine (its prompt stays cached here). */
  take(id: string): PulledKv | undefined {
    const h = this.held.get(id);
    if (h === undefined) return undefined;
    this.release(id);
    return {
      remote_engine_id: this.engineId,
      prompt_tokens: h.kv.promptTokens,
      kv_tokens: h.kv.kvTokens,
      generated: h.kv.generated,
    };
  }

  /** Free a held KV (pulled, timed out, or shutdown); false when it was not held. */
  release(id: string): boolean {
    const h = this.held.get(id);
    if (h === undefined) return false;
    clearTimeout(h.timer);
    this.held.delete(id);
    this.driver.releaseKv(id);
    return true;
  }

  close(): void {
    for (const id of [...this.held.keys()]) this.release(id);
  }
}

function roomKey(room: number): string {
  return `room:${room}`;
}

const kvNotFound = (what: string) =>
  errorBody(
    `no KV held for ${what} (pulled, released or never here)`,
    'invalid_request_error',
    null,
    'kv_not_found',
  );

/** POST /_preble/kv/:id/pull on a prefill-role engine. */
export function kvPullRoute(app: FastifyInstance, holder: KvHolder): void {
  app.post('/_preble/kv/:id/pull', async (request, reply) => {
    const { id } = request.params as { id: string };
    const pulled = holder.take(id);
    if (pulled === undefined)
      return reply
        .code(404)
        .send(
          errorBody(
            `no KV held for request '${id}' (pulled, released or never here)`,
            'invalid_request_error',
            null,
            'kv_not_found',
          ),
        );
    return pulled;
  });
  // SGLang-style: by bootstrap room, waiting for the prefill (the decode request was sent with it).
  app.post('/_preble/kv/room/:room/pull', async (request, reply) => {
    const room = Number((request.params as { room: string }).room);
    const gone = new AbortController();
    const onClose = () => gone.abort();
    reply.raw.on('close', onClose);
    try {
      const pulled = Number.isSafeInteger(room)
        ? await holder.takeRoom(room, ROOM_WAIT_MS, gone.signal)
        : undefined;
      if (pulled === undefined) return reply.code(404).send(kvNotFound(`bootstrap room ${room}`));
      return pulled;
    } finally {
      reply.raw.off('close', onClose);
    }
  });
}

/** How long a decode engine waits for its room's prefill (SGLang: SGLANG_DISAGGREGATION_WAITING_TIMEOUT). */
const ROOM_WAIT_MS = 300_000;

/** The decode side: pull the KV named by the params, then wait its transfer time over the link. */
export class KvPuller {
  constructor(
    private readonly link: KvLink,
    private readonly kvBytesPerToken: number,
    /** Engine seconds per wall second. */
    private readonly timeScale: number,
  ) {}

  /** Engine seconds to move `kvTokens` of KV over the link. */
  transferSeconds(kvTokens: number): number {
    return transferSeconds(this.link, kvTokens, this.kvBytesPerToken);
  }

  /**
   * Pull the KV for a request whose params the prefill engine returned; throws an HttpError 503
   * `kv_transfer_failed` when it is not there (the gateway then runs the prefill again).
   */
  async pull(
    params: KvTransferParams,
    promptTokens: number,
    signal: AbortSignal,
  ): Promise<PulledKv & { wallSeconds: number }> {
    const { remote_host: host, remote_port: port, remote_request_id: id } = params;
    if (typeof host !== 'string' || typeof port !== 'number' || typeof id !== 'string')
      throw new HttpError(
        400,
        'kv_transfer_params: do_remote_prefill needs remote_host, remote_port and remote_request_id',
        'kv_transfer_params',
        'invalid_value',
      );
    return this.pullFrom(
      host,
      port,
      encodeURIComponent(id),
      id,
      params.remote_engine_id,
      promptTokens,
      signal,
    );
  }

  /** SGLang-style: pull the KV of a bootstrap room from the prefill engine's bootstrap address. */
  async pullRoom(
    bootstrap: Bootstrap,
    promptTokens: number,
    signal: AbortSignal,
  ): Promise<PulledKv & { wallSeconds: number }> {
    if (bootstrap.port === 0)
      throw new HttpError(
        400,
        'bootstrap_port: needed with bootstrap_room',
        'bootstrap_port',
        'invalid_value',
      );
    const room = String(bootstrap.room);
    return this.pullFrom(
      bootstrap.host,
      bootstrap.port,
      `room/${room}`,
      `room ${room}`,
      null,
      promptTokens,
      signal,
    );
  }

  private async pullFrom(
    host: string,
    port: number,
    path: string,
    id: string,
    engineId: string | null | undefined,
    promptTokens: number,
    signal: AbortSignal,
  ): Promise<PulledKv & { wallSeconds: number }> {
    const params = { remote_engine_id: engineId };
    const shownHost = host.includes(':') ? `[${host}]` : host;
    let res: Response;
    try {
      res = await fetch(`http://${shownHost}:${port}/_preble/kv/${path}/pull`, {
        method: 'POST',
        signal,
      });
    } catch (error) {
      if (signal.aborted) throw error;
      throw kvFailed(`cannot reach the prefill engine at ${shownHost}:${port}: ${(error as Error).message}`);
    }
    const body = (await res.json().catch(() => undefined)) as PulledKv | undefined;
    if (!res.ok || body === undefined)
      throw kvFailed(`the prefill engine holds no KV for '${id}' (${res.status})`);
    if (params.remote_engine_id != null && body.remote_engine_id !== params.remote_engine_id)
      throw kvFailed(
        `the engine at ${shownHost}:${port} is ${body.remote_engine_id}, not ${params.remote_engine_id}`,
      );
    if (body.prompt_tokens !== promptTokens)
      throw new HttpError(
        400,
        `kv_transfer_params: the KV is for a prompt of ${body.prompt_tokens} tokens, this one has ${promptTokens}`,
        'kv_transfer_params',
        'invalid_value',
      );
    const seconds = this.transferSeconds(body.kv_tokens);
    const wallSeconds = seconds / this.timeScale;
    if (wallSeconds > 0) await sleep(wallSeconds * 1000, undefined, { signal });
    return { ...body, wallSeconds };
  }
}

function kvFailed(message: string): HttpError {
  return new HttpError(503, message, 'kv_transfer_params', 'kv_transfer_failed', 'server_error');
}
