import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { firstIssue } from '../util/zod-issue.ts';
import type { Advice } from './advice/advisor.ts';
import { bearerToken, isAdminKey, type KeyStore } from './auth.ts';
import { type ReplicaConfig, type ReplicaRole, replicaSchema } from './config.ts';
import { sendError } from './errors.ts';
import { type Replica, type ReplicaSet, replicaHardware } from './replicas.ts';

export interface AdminContext {
  readonly adminKey: string;
  readonly replicas: ReplicaSet;
  readonly keys: KeyStore;
  readonly defaultKvTokens: number;
  /** The gateway's `model`, for a replica added without one. */
  readonly defaultModel: string | undefined;
  readonly now: () => number;
  /** Read the replicas' /v1/models now (a new replica joins its model's pool). */
  readonly discoverModels: () => Promise<void>;
  /** Why a fleet with these roles could never run under the policy (a role it cannot use); undefined: fine. */
  readonly checkRoles: (roles: readonly ReplicaRole[]) => string | undefined;
  /** Live advice: the latest, 'pending' before the first, 'off' when not configured. */
  readonly advice?: () => Advice | 'pending' | 'off';
}

const newKey = z
  .object({
    name: z.string().min(1).max(100),
    key: z.string().min(16).optional(),
    ratePerSecond: z.number().positive().optional(),
    burst: z.number().min(1).optional(),
  })
  .strict();

function describeReplica(r: Replica, now: number) {
  return {
    id: r.id,
    url: r.url,
    dialect: r.dialect.name,
    role: r.role,
    state: r.removed ? 'removed' : r.view === 'gone' ? 'down' : r.view,
    healthy: r.healthy,
    breaker: r.breaker.state(now),
    inflight: r.inflight,
    kvTokens: r.kvTokens,
    /** Its hardware's cost-model preset, when configured; null: the gateway's. */
    costModel: r.costModel?.name ?? null,
    /** The model pool it is in: a name, `*` (serves what no named pool does), or null (not known yet). */
    model: r.modelPool === undefined ? null : (r.modelPool.model ?? '*'),
  };
}

/**
 * The admin API (/admin/...): replicas (list, add, drain, resume, remove) and client keys (list,
 * add, revoke). Registered only when an admin key is configured; client keys are refused here. The
 * only place replica URLs enter at run time, so no client can ever point the gateway anywhere.
 */
export function adminRoutes(app: FastifyInstance, ctx: AdminContext): void {
  app.register(
    async (admin) => {
      admin.addHook('onRequest', async (request, reply) => {
        const token = bearerToken(request.headers.authorization);
        if (isAdminKey(token, ctx.adminKey)) return;
        if (token !== undefined && ctx.keys.isClientKey(token))
          return sendError(
            reply,
            403,
            'client keys cannot use the admin API',
            'permission_error',
            'forbidden',
          );
        return sendError(
          reply,
          401,
          'the admin API needs the admin key',
          'authentication_error',
          'invalid_api_key',
        );
      });
      const replicaOf = (request: FastifyRequest, reply: FastifyReply): Replica | undefined => {
        const id = Number((request.params as { id: string }).id);
        const r = Number.isInteger(id) ? ctx.replicas.get(id) : undefined;
        if (r === undefined || r.removed) {
          sendError(
            reply,
            404,
            `no replica with id '${(request.params as { id: string }).id}'`,
            'invalid_request_error',
            'not_found',
          );
          return undefined;
        }
        return r;
      };
      admin.get('/replicas', async () => ({
        replicas: ctx.replicas.all().map((r) => describeReplica(r, ctx.now())),
      }));
      admin.post('/replicas', async (request, reply) => {
        const parsed = replicaSchema.safeParse(request.body);
        if (!parsed.success) return badBody(reply, parsed.error);
        const added = await addReplica(ctx, parsed.data);
        if (!added.ok)
          return sendError(
            reply,
            added.status,
            added.message,
            'invalid_request_error',
            added.code,
            added.status === 400 ? 'role' : null,
          );
        return reply.code(201).send(describeReplica(added.replica, ctx.now()));
      });
      admin.post('/replicas/:id/drain', async (request, reply) => {
        const r = replicaOf(request, reply);
        if (r === undefined) return reply;
        ctx.replicas.drain(r, true);
        return describeReplica(r, ctx.now());
      });
      admin.post('/replicas/:id/resume', async (request, reply) => {
        const r = replicaOf(request, reply);
        if (r === undefined) return reply;
        ctx.replicas.drain(r, false);
        return describeReplica(r, ctx.now());
      });
      admin.delete('/replicas/:id', async (request, reply) => {
        const r = replicaOf(request, reply);
        if (r === undefined) return reply;
        // In-flight requests finish; the pool closes after them.
        void ctx.replicas.remove(r);
        return describeReplica(r, ctx.now());
      });
      admin.get('/advice', async (_request, reply) => {
        const advice = ctx.advice?.() ?? 'off';
        if (advice === 'off')
          return sendError(
            reply,
            404,
            'live advice is off (advice: in the config, or --advice)',
            'invalid_request_error',
            'not_found',
          );
        return advice === 'pending' ? { status: 'pending' } : { status: 'ready', ...advice };
      });
      admin.get('/keys', async () => ({ keys: ctx.keys.names() }));
      admin.post('/keys', async (request, reply) => {
        const parsed = newKey.safeParse(request.body);
        if (!parsed.success) return badBody(reply, parsed.error);
        try {
          const key = ctx.keys.add(parsed.data);
          return reply.code(201).send({ name: parsed.data.name, key });
        } catch (error) {
          return sendError(reply, 409, (error as Error).message, 'invalid_request_error', 'conflict');
        }
      });
      admin.delete('/keys/:name', async (request, reply) => {
        const { name } = request.params as { name: string };
        if (!ctx.keys.revoke(name))
          return sendError(reply, 404, `no key named '${name}'`, 'invalid_request_error', 'not_found');
        return { name, revoked: true };
      });
    },
    { prefix: '/admin' },
  );
}

/** What adding a replica needs: the admin API's and the live advice actor's (advice/actor.ts) one way in. */
export type ReplicaAdding = Pick<
  AdminContext,
  'replicas' | 'checkRoles' | 'defaultKvTokens' | 'defaultModel' | 'discoverModels'
>;

export type AddOutcome =
  | { readonly ok: true; readonly replica: Replica }
  | { readonly ok: false; readonly status: 400 | 409; readonly message: string; readonly code: string };

/** Add a replica as POST /admin/replicas does: roles the policy can use, no URL twice. */
export async function addReplica(ctx: ReplicaAdding, data: ReplicaConfig): Promise<AddOutcome> {
  const { url, dialect, role, kvTokens, costModel, model, kvEvents } = data;
  const problem = ctx.checkRoles([...ctx.replicas.present().map((r) => r.role), role]);
  if (problem !== undefined) return { ok: false, status: 400, message: problem, code: 'invalid_role' };
  if (ctx.replicas.present().some((r) => r.url === new URL(url).origin))
    return { ok: false, status: 409, message: `replica ${url} is already present`, code: 'conflict' };
  const replica = ctx.replicas.add({
    url,
    dialect,
    role,
    ...replicaHardware(costModel, kvTokens, ctx.defaultKvTokens),
    model: model ?? ctx.defaultModel,
    kvEvents,
  });
  if (replica.configuredModel === undefined) await ctx.discoverModels();
  return { ok: true, replica };
}

function badBody(reply: FastifyReply, error: z.ZodError): FastifyReply {
  const { param, message } = firstIssue(error);
  return sendError(reply, 400, message, 'invalid_request_error', null, param);
}
