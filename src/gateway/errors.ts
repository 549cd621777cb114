import type { FastifyReply } from 'fastify';

/** OpenAI-style error body: every failure the gateway answers looks like this. */
export function sendError(
  reply: FastifyReply,
  status: number,
  message: string,
  type = 'invalid_request_error',
  code: string | null = null,
  param: string | null = null,
): FastifyReply {
  return reply.code(status).type('application/json').send({ error: { message, type, param, code } });
}
