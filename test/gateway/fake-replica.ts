import Fastify, { type FastifyInstance } from 'fastify';
import { encodeChars } from '../../src/text/chars-tokenizer.ts';
import { renderChat } from '../../src/text/chat-template.ts';

/**
 * A minimal OpenAI-speaking replica for gateway tests: it remembers the prompts it served and reports
 * as cached the longest prefix shared with one of them, as a prefix-caching engine would. With
 * `dropConnections: n` it closes the connection of its first n generation requests without a word,
 * as a server does to a kept-alive connection it has just given up.
 */
export async function startFakeReplica(
  name: string,
  options: { dropConnections?: number } = {},
): Promise<{ url: string; app: FastifyInstance; served: string[]; dropped: () => number }> {
  const app = Fastify();
  let dropped = 0;
  const seen: Uint32Array[] = [];
  const served: string[] = [];
  const answer = (prompt: string) => {
    const tokens = encodeChars(prompt);
    let cached = 0;
    for (const s of seen) {
      let k = 0;
      while (k < s.length && k < tokens.length && s[k] === tokens[k]) k++;
      cached = Math.max(cached, k);
    }
    seen.push(tokens);
    served.push(prompt);
    return {
      prompt_tokens: tokens.length,
      completion_tokens: 3,
      total_tokens: tokens.length + 3,
      prompt_tokens_details: { cached_tokens: cached },
    };
  };
  const handle =
    (chat: boolean) =>
    async (
      request: { body: unknown },
      reply: { raw: import('node:http').ServerResponse; hijack(): void },
    ) => {
      if (dropped < (options.dropConnections ?? 0)) {
        dropped++;
        reply.hijack();
        reply.raw.socket?.destroy();
        return;
      }
      const body = request.body as {
        prompt?: string;
        messages?: { role: string; content: string }[];
        stream?: boolean;
        stream_options?: { include_usage?: boolean };
      };
      const usage = answer(chat ? renderChat(body.messages ?? []) : (body.prompt ?? ''));
      const object = chat ? 'chat.completion' : 'text_completion';
      if (!body.stream) {
        const choice = chat
          ? { index: 0, message: { role: 'assistant', content: 'abc' }, finish_reason: 'length' }
          : { index: 0, text: 'abc', finish_reason: 'length' };
        return { id: `${name}-1`, object, created: 0, model: 'm', choices: [choice], usage };
      }
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunkObject = chat ? 'chat.completion.chunk' : 'text_completion';
      for (const ch of 'abc') {
        const choice = chat
          ? { index: 0, delta: { content: ch }, finish_reason: null }
          : { index: 0, text: ch, finish_reason: null };
        reply.raw.write(
          `data: ${JSON.stringify({ id: `${name}-1`, object: chunkObject, created: 0, model: 'm', choices: [choice], usage: null })}\n\n`,
        );
      }
      if (body.stream_options?.include_usage) {
        reply.raw.write(
          `data: ${JSON.stringify({ id: `${name}-1`, object: chunkObject, created: 0, model: 'm', choices: [], usage })}\n\n`,
        );
      }
      reply.raw.end('data: [DONE]\n\n');
    };
  app.post('/v1/completions', handle(false) as never);
  app.post('/v1/chat/completions', handle(true) as never);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, app, served, dropped: () => dropped };
}
