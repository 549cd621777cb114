import type { FastifyReply } from 'fastify';
import type { Tokens } from '../../core/types.ts';
import type { EngineFinish } from '../../engine/types.ts';
import type { ServerContext } from '../context.ts';
import { HttpError } from '../errors.ts';
import { generatedText, generatedToken } from '../text.ts';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

/** How one endpoint shapes its responses. */
export interface ResponseFormat {
  /** The non-streaming body. */
  full(id: string, created: number, text: string, usage: Usage): unknown;
  /** Chunks sent before the first token (chat: the role). */
  opening(id: string, created: number): unknown[];
  /** A chunk carrying one token's text. */
  token(id: string, created: number, text: string): unknown;
  /** The chunk carrying finish_reason. */
  closing(id: string, created: number): unknown;
  /** The usage-only chunk (stream_options.include_usage). */
  usage(id: string, created: number, usage: Usage): unknown;
}

export interface GenerationJob {
  readonly idPrefix: string;
  readonly tokens: Tokens;
  readonly maxTokens: number;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly format: ResponseFormat;
}

export function checkModel(ctx: ServerContext, model: string): void {
  if (model !== ctx.model) {
    throw new HttpError(404, `The model '${model}' does not exist`, 'model', 'model_not_found');
  }
}

function usageOf(finish: EngineFinish): Usage {
  return {
    prompt_tokens: finish.promptTokens,
    completion_tokens: finish.outputTokens,
    total_tokens: finish.promptTokens + finish.outputTokens,
    prompt_tokens_details: { cached_tokens: finish.cachedTokens },
  };
}

/** Submit the job to the engine and answer, streaming or not; a client disconnect aborts it. */
export function runGeneration(ctx: ServerContext, reply: FastifyReply, job: GenerationJob): Promise<unknown> {
  if (job.tokens.length === 0) throw new HttpError(400, 'the prompt is empty', 'prompt', 'invalid_value');
  const id = ctx.nextId(job.idPrefix);
  const created = Math.floor(Date.now() / 1000);
  const { driver } = ctx;
  let done = false;

  if (!job.stream) {
    return new Promise((resolve, reject) => {
      const onClose = () => {
        if (!done) {
          done = true;
          driver.abort(id);
          resolve(undefined);
        }
      };
      try {
        driver.submit(id, job.tokens, job.maxTokens, {
          onFinish(finish) {
            done = true;
            reply.raw.off('close', onClose);
            resolve(
              job.format.full(
                id,
                created,
                generatedText(finish.outputTokens, ctx.textOffset),
                usageOf(finish),
              ),
            );
          },
        });
      } catch (error) {
        reject(submitError(error));
        return;
      }
      // The response closing before the answer means the client is gone: abort the request.
      reply.raw.on('close', onClose);
    });
  }

  // Streaming: check admission first so a refusal is still a JSON error.
  const raw = reply.raw;
  const write = (data: unknown) => {
    if (!raw.destroyed && !raw.writableEnded) raw.write(`data: ${JSON.stringify(data)}\n\n`);
  };
  // A stalled stream (--stall-after) sends its first `limit` tokens, then nothing, and stays open.
  const limit = ctx.faults.streamLimit();
  try {
    driver.submit(id, job.tokens, job.maxTokens, {
      onToken(index) {
        if (index < limit) {
          write(job.format.token(id, created, String.fromCodePoint(generatedToken(index, ctx.textOffset))));
        } else if (index === limit) ctx.faults.hold(raw);
      },
      onFinish(finish) {
        done = true;
        if (finish.outputTokens > limit) return;
        write(job.format.closing(id, created));
        if (job.includeUsage) write(job.format.usage(id, created, usageOf(finish)));
        if (!raw.destroyed && !raw.writableEnded) raw.end('data: [DONE]\n\n');
      },
    });
  } catch (error) {
    throw submitError(error);
  }
  reply.hijack();
  raw.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  for (const chunk of job.format.opening(id, created)) write(chunk);
  raw.on('close', () => {
    if (!done) {
      done = true;
      driver.abort(id);
    }
  });
  return Promise.resolve(reply);
}

function submitError(error: unknown): HttpError {
  const message = error instanceof Error ? error.message : String(error);
  if (message.includes('KV tokens')) {
    return new HttpError(400, message.replace(/^engine: /, ''), null, 'context_length_exceeded');
  }
  return new HttpError(500, message, null, null, 'server_error');
}
