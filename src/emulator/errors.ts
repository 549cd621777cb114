import type { FastifyReply } from 'fastify';
import type { z } from 'zod';
import { firstIssue } from '../util/zod-issue.ts';

/** The body of an OpenAI-style error response. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export function errorBody(
  message: string,
  type = 'invalid_request_error',
  param: string | null = null,
  code: string | null = null,
): OpenAiErrorBody {
  return { error: { message, type, param, code } };
}

/** An error a route throws to answer with `status` and an OpenAI-style body. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type = 'invalid_request_error',
  ) {
    super(message);
  }

  body(): OpenAiErrorBody {
    return errorBody(this.message, this.type, this.param, this.code);
  }
}

export function sendError(reply: FastifyReply, error: HttpError): FastifyReply {
  return reply.code(error.statusCode).type('application/json').send(error.body());
}

/** Parse `body` with `schema`, or throw a 400 naming the first bad field. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpError(400, 'request body must be a JSON object', null, 'invalid_body');
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const { param, message, issue } = firstIssue(result.error);
  const code =
    issue.code === 'invalid_type' && issue.input === undefined
      ? 'missing_required_parameter'
      : 'invalid_value';
  throw new HttpError(400, message, param, code);
}
