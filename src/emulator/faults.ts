import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { Random } from '../core/random.ts';
import { firstIssue } from '../util/zod-issue.ts';
import { FAIL_STATUS_RANGE, HEALTH_STATUS_RANGE } from './defaults.ts';
import { errorBody } from './errors.ts';

/**
 * Misbehaviours a replica can be told to show, for the gateway's reliability tests. All off by
 * default; they touch only generation requests, except `healthStatus`.
 */
export interface FaultSettings {
  /** Probability that a generation request is answered with `failStatus` instead of running. */
  readonly failRate: number;
  readonly failStatus: number;
  /** Generation requests are accepted and never answered (until the client gives up). */
  readonly hang: boolean;
  /** Wall-clock seconds before a generation request is handled (and so before its headers). */
  readonly firstByteDelay: number;
  /** A stream goes idle, still open, after this many content chunks; null: never. */
  readonly stallAfter: number | null;
  /** What /health answers. */
  readonly healthStatus: number;
}

export const NO_FAULTS: FaultSettings = {
  failRate: 0,
  failStatus: 500,
  hang: false,
  firstByteDelay: 0,
  stallAfter: null,
  healthStatus: 200,
};

/** The accepted ranges, shared by the CLI flags and the admin route. */
export { FAIL_STATUS_RANGE, HEALTH_STATUS_RANGE };

/** A partial update of the settings (the admin route's body); `seed` restarts the failure draws. */
export const faultPatchSchema = z.strictObject({
  failRate: z.number().min(0).max(1).optional(),
  failStatus: z.number().int().min(FAIL_STATUS_RANGE[0]).max(FAIL_STATUS_RANGE[1]).optional(),
  hang: z.boolean().optional(),
  // Capped well below setTimeout's limit (about 24.8 days), past which a timer fires at once.
  firstByteDelay: z.number().min(0).max(86_400).optional(),
  stallAfter: z.number().int().min(0).nullable().optional(),
  healthStatus: z.number().int().min(HEALTH_STATUS_RANGE[0]).max(HEALTH_STATUS_RANGE[1]).optional(),
  seed: z.number().int().min(0).optional(),
});
export type FaultPatch = z.infer<typeof faultPatchSchema>;

/** The current fault settings and the requests they hold. */
export class Faults {
  private current: FaultSettings;
  private random: Random;
  /** Responses kept open and idle (hung or stalled): closed on shutdown, as no answer will come. */
  private readonly held = new Set<ServerResponse>();
  /** Requests waiting out --first-byte-delay. */
  private delayed = 0;

  constructor(settings: Partial<FaultSettings> = {}, seed = 0) {
    this.current = { ...NO_FAULTS, ...parseFaults(settings) };
    this.random = new Random(seed);
  }

  get settings(): FaultSettings {
    return this.current;
  }

  /** Requests held open or delayed right now (0 once their clients have gone). */
  get active(): number {
    return this.held.size + this.delayed;
  }

  update(patch: FaultPatch): FaultSettings {
    const { seed, ...settings } = patch;
    this.current = { ...this.current, ...parseFaults(settings) };
    if (seed !== undefined) this.random = new Random(seed);
    return this.current;
  }

  /**
   * Whether the next generation request fails. One draw per request, in arrival order, whatever
   * the rate: the same seed gives the same sequence, and a higher rate fails a superset.
   */
  drawFailure(): boolean {
    return this.random.next() < this.current.failRate;
  }

  /** Content chunks a stream may send before it stalls. */
  streamLimit(): number {
    return this.current.stallAfter ?? Number.POSITIVE_INFINITY;
  }

  /** Keep `raw` open and silent until its client leaves (or the server shuts down). */
  hold(raw: ServerResponse): void {
    if (raw.destroyed || this.held.has(raw)) return;
    this.held.add(raw);
    raw.once('close', () => this.held.delete(raw));
  }

  /** Call `then` after `seconds` of wall time, unless the client leaves first (then nothing runs). */
  delay(raw: ServerResponse, seconds: number, then: () => void): void {
    if (raw.destroyed) return;
    this.delayed++;
    const onClose = () => {
      clearTimeout(timer);
      this.delayed--;
    };
    const timer = setTimeout(() => {
      raw.off('close', onClose);
      this.delayed--;
      then();
    }, seconds * 1000);
    raw.once('close', onClose);
  }

  /** Shutdown: drop held connections, whose clients would otherwise keep the server open. */
  releaseHeld(): void {
    for (const raw of this.held) raw.destroy();
    this.held.clear();
  }

  /** The settings and the number of active requests (the admin route's answer). */
  report(): FaultSettings & { active: number } {
    return { ...this.current, active: this.active };
  }
}

/** Validate settings given in code (the CLI checks its flags first, one line each). */
function parseFaults(input: Partial<FaultSettings>): Partial<FaultSettings> {
  const result = faultPatchSchema.safeParse(input);
  // Keys given as undefined keep their defaults.
  if (result.success)
    return Object.fromEntries(Object.entries(result.data).filter(([, v]) => v !== undefined));
  throw new Error(`faults: ${firstIssue(result.error).message}`);
}

function sendFault(reply: FastifyReply, status: number): void {
  const type = status >= 500 ? 'server_error' : 'invalid_request_error';
  reply.code(status).send(errorBody(`injected fault (HTTP ${status})`, type, null, 'injected_fault'));
}

/**
 * Applies the faults to every route of `scope` (the generation routes' own context), before the
 * handler runs: so a failed, hung or delayed request never reaches the engine.
 */
export function faultHooks(scope: FastifyInstance, faults: Faults): void {
  scope.addHook('preHandler', (_request, reply, done) => {
    const s = faults.settings;
    // Drawn for every request, so the failure sequence does not depend on the other faults.
    const fail = faults.drawFailure();
    if (s.hang) {
      faults.hold(reply.raw);
      return;
    }
    const proceed = fail ? () => sendFault(reply, s.failStatus) : () => done();
    if (s.firstByteDelay > 0) faults.delay(reply.raw, s.firstByteDelay, proceed);
    else proceed();
  });
}
