import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyInstance } from 'fastify';
import { renderChat } from '../../src/text/chat-template.ts';

/** Slot files, by name: the `--slot-save-path` directory the replicas share. */
export type SlotDir = Map<string, string>;

export interface FakeLlamaOptions {
  slots?: number;
  /** Answer save / restore / completions with a 500 (completions: the next `failCompletions` ones). */
  failSave?: boolean;
  failRestore?: boolean;
  failCompletions?: number;
  /** Milliseconds each completion takes before answering (to overlap requests). */
  delayMs?: number;
}

export interface FakeLlama {
  readonly url: string;
  readonly app: FastifyInstance;
  readonly options: FakeLlamaOptions;
  /** What it was asked, in order: `save s`, `restore s`, `completion s/- max=N`. */
  readonly log: string[];
  /** Pinned requests that found their slot already in use by another gateway leg. */
  conflicts: number;
}

/**
 * A llama-server stand-in for the slot-moving PD protocol: slots with their cached prompt, `GET
 * /slots`, `POST /slots/{id}?action=save|restore` into a shared `SlotDir`, and completions that reuse
 * a slot's common prefix when `cache_prompt` is set (all but the last prompt token, as llama-server),
 * pinned with `id_slot`. Its text is a function of the prompt only, so PD and colocated answers match.
 */
export async function startFakeLlama(dir: SlotDir, options: FakeLlamaOptions = {}): Promise<FakeLlama> {
  const app = Fastify();
  const n = options.slots ?? 2;
  const cache: string[] = Array.from({ length: n }, () => '');
  const inUse = new Set<number>();
  let next = 0;
  const fake: FakeLlama = { url: '', app, options, log: [], conflicts: 0 };
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/v1/models', async () => ({ object: 'list', data: [{ id: 'm', object: 'model' }] }));
  app.get('/metrics', async (_req, reply) => reply.type('text/plain').send(''));
  app.get('/slots', async () => cache.map((_, id) => ({ id, is_processing: inUse.has(id) })));
  app.post('/slots/:id', async (request, reply) => {
    const id = Number((request.params as { id: string }).id);
    const action = (request.query as { action?: string }).action;
    const filename = (request.body as { filename?: string }).filename ?? '';
    fake.log.push(`${action} ${id}`);
    if (action === 'save') {
      if (options.failSave) return reply.code(500).send({ error: { code: 500, message: 'disk full' } });
      dir.set(filename, cache[id]!);
      return { id_slot: id, filename, n_saved: cache[id]!.length };
    }
    if (action === 'restore') {
      const saved = dir.get(filename);
      if (options.failRestore || saved === undefined)
        return reply.code(400).send({ error: { code: 400, message: 'Unable to restore slot' } });
      cache[id] = saved;
      return { id_slot: id, filename, n_restored: saved.length };
    }
    return reply.code(400).send({ error: { code: 400, message: 'bad action' } });
  });
  const handle = (chat: boolean) => async (request: { body: unknown }, reply: Reply) => {
    const body = request.body as {
      prompt?: string;
      messages?: { role: string; content: string }[];
      stream?: boolean;
      max_tokens?: number;
      id_slot?: number;
      cache_prompt?: boolean;
    };
    const pinned = body.id_slot;
    const slot = pinned ?? next++ % n;
    fake.log.push(`completion ${pinned ?? '-'} max=${body.max_tokens}`);
    if (pinned !== undefined) {
      if (inUse.has(slot)) fake.conflicts++;
      inUse.add(slot);
    }
    try {
      if (options.delayMs) await sleep(options.delayMs);
      if ((options.failCompletions ?? 0) > 0) {
        options.failCompletions!--;
        return reply.code(500).send({ error: { code: 500, message: 'boom' } });
      }
      const prompt = chat ? renderChat(body.messages ?? []) : (body.prompt ?? '');
      let shared = 0;
      const had = cache[slot]!;
      if (body.cache_prompt)
        while (shared < had.length && shared < prompt.length - 1 && had[shared] === prompt[shared]) shared++;
      cache[slot] = prompt;
      const max = body.max_tokens ?? 4;
      let seed = 0;
      for (const ch of prompt) seed = (seed * 31 + ch.charCodeAt(0)) % 9973;
      const tokens = Array.from({ length: max }, (_, i) => String.fromCharCode(97 + ((seed + i * 7) % 26)));
      const usage = {
        prompt_tokens: prompt.length,
        completion_tokens: max,
        total_tokens: prompt.length + max,
        prompt_tokens_details: { cached_tokens: shared },
      };
      const timings = { cache_n: shared, prompt_n: prompt.length - shared, prompt_ms: 1, predicted_n: max };
      if (!body.stream) {
        const text = tokens.join('');
        const choice = chat
          ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'length' }
          : { index: 0, text, finish_reason: 'length' };
        return {
          id: 'x',
          object: chat ? 'chat.completion' : 'text_completion',
          created: 0,
          model: 'm',
          choices: [choice],
          usage,
          timings,
        };
      }
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
      const object = chat ? 'chat.completion.chunk' : 'text_completion';
      for (const t of tokens) {
        const choice = chat
          ? { index: 0, delta: { content: t }, finish_reason: null }
          : { index: 0, text: t, finish_reason: null };
        reply.raw.write(
          `data: ${JSON.stringify({ id: 'x', object, created: 0, model: 'm', choices: [choice], timings })}\n\n`,
        );
      }
      const last = chat
        ? { index: 0, delta: {}, finish_reason: 'length' }
        : { index: 0, text: '', finish_reason: 'length' };
      reply.raw.write(
        `data: ${JSON.stringify({ id: 'x', object, created: 0, model: 'm', choices: [last], usage, timings })}\n\n`,
      );
      reply.raw.end('data: [DONE]\n\n');
      return reply;
    } finally {
      if (pinned !== undefined) inUse.delete(slot);
    }
  };
  app.post('/v1/completions', handle(false));
  app.post('/v1/chat/completions', handle(true));
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return Object.assign(fake, { url });
}

type Reply = {
  code(status: number): { send(body: unknown): unknown };
  raw: import('node:http').ServerResponse;
  hijack(): void;
};
