import { randomBytes } from 'node:crypto';
import type { Attempt } from './forward.ts';
import {
  endpointOf,
  oneTokenBody,
  type PdDecodePlan,
  type PdProtocol,
  type PdSession,
} from './pd-protocol.ts';
import type { Replica } from './replicas.ts';
import { requestResending } from './upstream-request.ts';

/**
 * llama.cpp has no KV connector, so the gateway moves the slot (docs/gateway.md, "llama.cpp"):
 *
 * 1. reserve a slot `p` of the prefill replica (the gateway's own book, see SlotBook) and prefill
 *    there: the client's body with one token, `cache_prompt: true` and `id_slot: p`;
 * 2. save it: `POST /slots/p?action=save {"filename": F}` into the replica's `--slot-save-path`;
 * 3. reserve a slot `d` of the decode replica, restore F there (`POST /slots/d?action=restore`,
 *    the same directory, shared), then give `p` back;
 * 4. the decode leg: the client's body with `cache_prompt: true` and `id_slot: d`; llama-server
 *    reuses the restored tokens as the prompt's common prefix (it recomputes the last one only).
 *
 * Failures: the save fails (no --slot-save-path, disk) or the restore fails (not shared, no room):
 * the decode replica computes the prompt itself, in its reserved slot (colocated). Nothing can give a
 * wrong text: a slot file holds its tokens, and llama-server reuses only the prefix they share with
 * the prompt. F is named by this gateway, the prefill replica and slot `p`, so the files stay bounded
 * (one per prefill slot) and `p` stays reserved until F is restored.
 */
export const llamacppSlots: PdProtocol = {
  name: 'llamacpp-slots',
  open(a: Attempt): PdSession {
    const prefill = a.replica;
    let prefillSlot: Reservation | undefined;
    let file: string | undefined;
    let saveSeconds = 0;
    let restoredOnce = false;
    let saveFailure: string | undefined;
    const decodeSlots = new Set<Reservation>();
    const releasePrefill = () => {
      prefillSlot?.release();
      prefillSlot = undefined;
    };
    return {
      async prefillRequest(signal) {
        prefillSlot = await slotBook(prefill).acquire(signal);
        return {
          path: endpointOf(a),
          body: { ...oneTokenBody(a.body), cache_prompt: true, id_slot: prefillSlot.slot },
        };
      },
      async handOff(_answer, signal) {
        const slot = prefillSlot!.slot;
        const name = `preble-${GATEWAY_TOKEN}-r${prefill.id}-s${slot}.bin`;
        const started = performance.now();
        const saved = await slotAction(prefill, slot, 'save', name, signal);
        if (!saved.ok) {
          releasePrefill();
          saveFailure = saved.message;
          return { kind: 'recompute', reason: `slot save failed: ${saved.message}` };
        }
        saveSeconds = (performance.now() - started) / 1000;
        file = name;
        return { kind: 'kv' };
      },
      async decodeRequest(decode, signal): Promise<PdDecodePlan> {
        const colocated = (
          reservation: Reservation | undefined,
          reason: string,
          detail: string,
        ): PdDecodePlan => ({
          body: {
            ...a.body,
            cache_prompt: true,
            ...(reservation === undefined ? {} : { id_slot: reservation.slot }),
          },
          handOff: 'recompute',
          reason,
          detail,
          release: () => free(reservation),
        });
        const free = (r: Reservation | undefined) => {
          if (r === undefined) return;
          decodeSlots.delete(r);
          r.release();
        };
        if (decode.dialect.name !== 'llamacpp') {
          releasePrefill();
          return colocated(
            undefined,
            'dialect',
            `decode replica speaks ${decode.dialect.name}, not llamacpp`,
          );
        }
        let reservation: Reservation | undefined;
        try {
          reservation = await slotBook(decode).acquire(signal);
          decodeSlots.add(reservation);
        } catch (error) {
          if (signal.aborted) throw error;
          releasePrefill();
          return colocated(undefined, 'no_slots', `no slot list on the decode replica: ${describe(error)}`);
        }
        if (file === undefined) {
          releasePrefill();
          return colocated(reservation, 'save_failed', saveFailure ?? 'no saved slot');
        }
        const started = performance.now();
        const restored = await slotAction(decode, reservation.slot, 'restore', file, signal);
        // The file may be overwritten from here on: a retry's restore is best effort (see above).
        if (!restoredOnce) {
          restoredOnce = true;
          releasePrefill();
        }
        if (!restored.ok) {
          if (signal.aborted) {
            free(reservation);
            throw signal.reason;
          }
          return colocated(reservation, 'restore_failed', restored.message);
        }
        const slot = reservation.slot;
        const r = reservation;
        return {
          body: { ...a.body, cache_prompt: true, id_slot: slot },
          handOff: 'kv',
          transferSeconds: saveSeconds + (performance.now() - started) / 1000,
          release: () => free(r),
        };
      },
      close() {
        releasePrefill();
        for (const r of [...decodeSlots]) {
          decodeSlots.delete(r);
          r.release();
        }
      },
    };
  },
};

/** Names this gateway's slot files apart from another's on the same replicas. */
const GATEWAY_TOKEN = randomBytes(4).toString('hex');

const ACTION_TIMEOUT_MS = 30_000;

async function slotAction(
  replica: Replica,
  slot: number,
  action: 'save' | 'restore',
  filename: string,
  signal: AbortSignal,
): Promise<{ ok: true } | { ok: false; message: string }> {
  try {
    // Over the connections that carry the replica's streamed answers, so one may be a stale one.
    const res = await requestResending(replica.pool, {
      path: `/slots/${slot}?action=${action}`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ filename }),
      signal,
      headersTimeout: ACTION_TIMEOUT_MS,
      bodyTimeout: ACTION_TIMEOUT_MS,
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) return { ok: false, message: `${res.statusCode} ${text.slice(0, 200)}` };
    return { ok: true };
  } catch (error) {
    return { ok: false, message: describe(error) };
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** One reserved slot; `release` gives it back once (later calls do nothing). */
export interface Reservation {
  readonly slot: number;
  release(): void;
}

/**
 * The gateway's reservations of one llama.cpp replica's slots. Its slot ids come from GET /slots
 * (asked once); a slot is handed to one PD leg at a time, waiters are served in order. llama-server
 * itself defers a task pinned to a busy slot, so the book only keeps two gateway legs from sharing a
 * slot between a restore and the decode that uses it.
 */
export class SlotBook {
  private slots: Promise<number[]> | undefined;
  private readonly busy = new Set<number>();
  private readonly waiters: { resolve: (slot: number) => void }[] = [];

  constructor(private readonly list: () => Promise<number[]>) {}

  async acquire(signal: AbortSignal): Promise<Reservation> {
    signal.throwIfAborted();
    this.slots ??= this.list().catch((error: unknown) => {
      this.slots = undefined; // ask again next time
      throw error;
    });
    const ids = await this.slots;
    signal.throwIfAborted();
    const free = ids.find((id) => !this.busy.has(id));
    const slot =
      free ??
      (await new Promise<number>((resolve, reject) => {
        const waiter = { resolve };
        this.waiters.push(waiter);
        signal.addEventListener(
          'abort',
          () => {
            const i = this.waiters.indexOf(waiter);
            if (i >= 0) this.waiters.splice(i, 1);
            reject(signal.reason);
          },
          { once: true },
        );
      }));
    this.busy.add(slot);
    let released = false;
    return {
      slot,
      release: () => {
        if (released) return;
        released = true;
        const next = this.waiters.shift();
        // Handed straight to the next waiter (it stays busy), else free.
        if (next !== undefined) next.resolve(slot);
        else this.busy.delete(slot);
      },
    };
  }

  /** Slots reserved now (for tests). */
  get reserved(): number {
    return this.busy.size;
  }
}

const books = new WeakMap<Replica, SlotBook>();

/** The slot book of a llama.cpp replica (one per replica, for the gateway's life). */
export function slotBook(replica: Replica): SlotBook {
  let book = books.get(replica);
  if (book === undefined) {
    book = new SlotBook(() => listSlots(replica));
    books.set(replica, book);
  }
  return book;
}

async function listSlots(replica: Replica): Promise<number[]> {
  const res = await replica.control.request({
    path: '/slots',
    method: 'GET',
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200)
    throw new Error(`GET /slots answered ${res.statusCode} (is the replica started with --no-slots?)`);
  const json = JSON.parse(text) as unknown;
  if (!Array.isArray(json) || json.length === 0) throw new Error('GET /slots answered no slots');
  return json.map((s: { id?: unknown }, i) => (Number.isInteger(s?.id) ? (s.id as number) : i));
}
