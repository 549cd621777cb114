import { randomUUID } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { Tokens } from '../../core/types.ts';
import type { EngineFinish } from '../../engine/types.ts';
import { stopStrings } from '../../text/chat-content.ts';
import type { ServerContext } from '../context.ts';
import type { FirstTokenTiming, RequestListener } from '../driver.ts';
import { HttpError } from '../errors.ts';
import type { Bootstrap, KvTransferParams } from '../pd.ts';
import { type ChoicePlan, generatedText, generatedToken, planChoice } from '../text.ts';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

/** One finished choice of a non-streaming answer. */
export interface FinishedChoice {
  readonly index: number;
  readonly text: string;
  readonly finish: ChoicePlan['finish'];
}

/** How one endpoint shapes its responses. */
export interface ResponseFormat {
  /** The non-streaming body. */
  full(id: string, created: number, choices: readonly FinishedChoice[], usage: Usage): unknown;
  /** Chunks sent for a choice before its first token (chat: the role). */
  opening(id: string, created: number, index: number): unknown[];
  /** A chunk carrying one token's text of choice `index`. */
  token(id: string, created: number, index: number, text: string): unknown;
  /** The chunk carrying choice `index`'s finish_reason. */
  closing(id: string, created: number, index: number, finish: ChoicePlan['finish']): unknown;
  /** The usage-only chunk (stream_options.include_usage). */
  usage(id: string, created: number, usage: Usage): unknown;
}

export interface GenerationJob {
  readonly idPrefix: string;
  readonly tokens: Tokens;
  readonly maxTokens: number;
  /** Choices to generate (OpenAI's `n`); each is one engine request on the same prompt. */
  readonly choices: number;
  readonly stop: string | readonly string[] | null | undefined;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly format: ResponseFormat;
  /** Prefill/decode disaggregation (vLLM-style; pd.ts): what the request carries. */
  readonly kvTransfer?: KvTransferParams | undefined;
  /** Prefill/decode disaggregation (SGLang-style; pd.ts): the bootstrap host, port and room. */
  readonly bootstrap?: Bootstrap | undefined;
}

/** Puts choice `k`'s engine request in (a mixed engine submits it; a decode engine adopts its KV). */
type StartChoice = (engineId: string, outputTokens: number, listener: RequestListener) => void;

export function checkModel(ctx: ServerContext, model: string): void {
  if (model !== ctx.model) {
    throw new HttpError(404, `The model '${model}' does not exist`, 'model', 'model_not_found');
  }
}

/** Usage of a request's choices: the prompt once (as the first choice met the cache), outputs summed. */
function usageOf(finishes: readonly EngineFinish[]): Usage {
  const first = finishes[0]!;
  const output = finishes.reduce((sum, f) => sum + f.outputTokens, 0);
  return {
    prompt_tokens: first.promptTokens,
    completion_tokens: output,
    total_tokens: first.promptTokens + output,
    prompt_tokens_details: { cached_tokens: first.cachedTokens },
  };
}

/**
 * Submit the job to the engine (one engine request per choice) and answer, streaming or not; a
 * client disconnect aborts every choice still running. Ids are random (`cmpl-<uuid>`), so replicas
 * never answer with the same id.
 */
export function runGeneration(ctx: ServerContext, reply: FastifyReply, job: GenerationJob): Promise<unknown> {
  if (job.tokens.length === 0) throw new HttpError(400, 'the prompt is empty', 'prompt', 'invalid_value');
  const remote = job.kvTransfer;
  const bootstrap = job.bootstrap;
  if (ctx.role === 'prefill' && bootstrap !== undefined) return runPrefillLeg(ctx, reply, job, bootstrap);
  if (ctx.role === 'decode' && bootstrap !== undefined) return runDecodeLeg(ctx, reply, job, { bootstrap });
  if (ctx.role === 'prefill') {
    if (remote?.do_remote_decode !== true)
      throw new HttpError(
        400,
        "this is a prefill-role engine: it runs prompts for a decode engine (send kv_transfer_params: {do_remote_decode: true}, or SGLang's bootstrap_host, bootstrap_port and bootstrap_room)",
        'kv_transfer_params',
        'invalid_value',
      );
    return runPrefillLeg(ctx, reply, job);
  }
  if (ctx.role === 'decode') {
    if (remote?.do_remote_prefill !== true)
      throw new HttpError(
        400,
        "this is a decode-role engine: it continues requests prefilled elsewhere (send the prefill answer's kv_transfer_params, do_remote_prefill: true, or SGLang's bootstrap_host, bootstrap_port and bootstrap_room)",
        'kv_transfer_params',
        'invalid_value',
      );
    return runDecodeLeg(ctx, reply, job, { params: remote });
  }
  return generate(ctx, reply, job, (engineId, outputTokens, listener) =>
    ctx.driver.submit(engineId, job.tokens, outputTokens, listener, job.maxTokens),
  );
}

/**
 * The prefill leg (prefill-role engine): the prompt runs to its first token, the KV stays held here
 * for the decode engine, and the answer (one token, never streamed, as vLLM's proxy asks it) carries
 * the `kv_transfer_params` that say where to pull it from.
 */
function runPrefillLeg(
  ctx: ServerContext,
  reply: FastifyReply,
  job: GenerationJob,
  bootstrap?: Bootstrap,
): Promise<unknown> {
  if (job.choices !== 1)
    throw new HttpError(400, 'n: a prefill leg runs one choice', 'n', 'unsupported_value');
  if (job.stream)
    throw new HttpError(
      400,
      'stream: a prefill leg answers in one piece (send stream: false, as vLLM does)',
      'stream',
      'unsupported_value',
    );
  const holder = ctx.kvHolder!;
  const id = `${job.idPrefix}-${randomUUID().replaceAll('-', '')}`;
  const created = Math.floor(Date.now() / 1000);
  const plan = planChoice(1, ctx.textOffset, stopStrings(job.stop));
  return new Promise((resolve, reject) => {
    let settled = false;
    let timing: PrebleTiming | undefined;
    const onClose = () => {
      if (settled) return;
      settled = true;
      ctx.driver.abort(id);
      resolve(undefined);
    };
    try {
      // Two planned tokens, so the engine holds the KV after the first (a one-token request would end here).
      ctx.driver.submit(
        id,
        job.tokens,
        2,
        {
          onToken(_index, first) {
            if (first !== undefined) timing = prebleTiming(first);
          },
          onKvReady(kv) {
            if (settled) {
              ctx.driver.releaseKv(kv.id);
              return;
            }
            settled = true;
            reply.raw.off('close', onClose);
            // SGLang-style: held for the decode engine that asks by room; vLLM-style: named in the answer.
            const kvTransferParams =
              bootstrap === undefined ? holder.hold(kv) : holder.holdRoom(bootstrap.room, kv);
            const usage: Usage = {
              prompt_tokens: kv.promptTokens,
              completion_tokens: kv.generated,
              total_tokens: kv.promptTokens + kv.generated,
              prompt_tokens_details: { cached_tokens: kv.cachedTokens },
            };
            const choices = [
              { index: 0, text: generatedText(plan.visible, ctx.textOffset), finish: plan.finish },
            ];
            resolve({
              ...(job.format.full(id, created, choices, usage) as object),
              ...(kvTransferParams === undefined ? {} : { kv_transfer_params: kvTransferParams }),
              ...(timing === undefined ? {} : { preble_timing: timing }),
            });
          },
          onFinish() {
            // Unreachable with two planned tokens; an answer without KV must not hang the client.
            if (settled) return;
            settled = true;
            reply.raw.off('close', onClose);
            reject(
              new HttpError(500, 'the prefill leg ended without holding its KV', null, null, 'server_error'),
            );
          },
        },
        // No max_tokens cap here: the client's 1 would end the request instead of holding its KV.
      );
    } catch (error) {
      reject(submitError(error));
      return;
    }
    reply.raw.on('close', onClose);
  });
}

/**
 * The decode leg (decode-role engine): pull the KV the params name from the prefill engine, wait its
 * transfer time, adopt the request (its prompt counts as cached, none of it is computed) and answer
 * as a mixed engine would, every token from the first (`preble_timing.kv_transfer_ms` on the first).
 */
async function runDecodeLeg(
  ctx: ServerContext,
  reply: FastifyReply,
  job: GenerationJob,
  from: { readonly params: KvTransferParams } | { readonly bootstrap: Bootstrap },
): Promise<unknown> {
  if (job.choices !== 1)
    throw new HttpError(400, 'n: a decode leg runs one choice', 'n', 'unsupported_value');
  // Checked before the pull, as a server checks a request's length at the door: refused here, the KV
  // stays on the prefill engine for a larger decode engine to pull.
  const { need, capacity } = ctx.driver.kvNeed(job.tokens, job.maxTokens);
  if (need > capacity)
    throw new HttpError(
      400,
      `the request needs ${need} KV tokens (its prompt and max_tokens), more than this engine's capacity of ${capacity}`,
      null,
      'context_length_exceeded',
    );
  const gone = new AbortController();
  const onClose = () => gone.abort();
  reply.raw.on('close', onClose);
  let pulled: Awaited<ReturnType<NonNullable<ServerContext['kvPuller']>['pull']>>;
  try {
    pulled =
      'bootstrap' in from
        ? await ctx.kvPuller!.pullRoom(from.bootstrap, job.tokens.length, gone.signal)
        : await ctx.kvPuller!.pull(from.params, job.tokens.length, gone.signal);
  } catch (error) {
    if (gone.signal.aborted) return undefined; // the client left: nobody to answer
    throw error;
  } finally {
    reply.raw.off('close', onClose);
  }
  if (reply.raw.destroyed) return undefined;
  const transferMs = Math.round(pulled.wallSeconds * 1e6) / 1e3;
  return generate(
    ctx,
    reply,
    job,
    (engineId, outputTokens, listener) => {
      if (outputTokens > pulled.generated) {
        ctx.driver.adopt(
          engineId,
          job.tokens,
          outputTokens,
          { kvTokens: pulled.kv_tokens, generated: pulled.generated },
          listener,
          job.maxTokens,
        );
        return;
      }
      // Every token it asks for was made by the prefill leg: nothing left to compute here.
      setImmediate(() => {
        listener.onStart?.(job.tokens.length);
        for (let i = 0; i < outputTokens; i++)
          listener.onToken?.(i, i === 0 ? { queueSeconds: 0, prefillSeconds: 0 } : undefined);
        listener.onFinish?.({
          id: engineId,
          promptTokens: job.tokens.length,
          cachedTokens: job.tokens.length,
          outputTokens,
        });
      });
    },
    { kv_transfer_ms: transferMs },
  );
}

function generate(
  ctx: ServerContext,
  reply: FastifyReply,
  job: GenerationJob,
  start: StartChoice,
  timingExtra: Record<string, number> = {},
): Promise<unknown> {
  const id = `${job.idPrefix}-${randomUUID().replaceAll('-', '')}`;
  const created = Math.floor(Date.now() / 1000);
  const { driver } = ctx;
  const stops = stopStrings(job.stop);
  // Each choice generates its own text (the filler shifted by its index).
  const plans = Array.from({ length: job.choices }, (_, k) =>
    planChoice(job.maxTokens, ctx.textOffset + k, stops),
  );
  const engineId = (k: number) => (job.choices === 1 ? id : `${id}.${k}`);
  const finishes: (EngineFinish | undefined)[] = plans.map(() => undefined);
  let remaining = job.choices;
  let done = false;
  const abortAll = () => {
    if (done) return;
    done = true;
    for (let k = 0; k < job.choices; k++) if (finishes[k] === undefined) driver.abort(engineId(k));
  };
  /** Submit every choice; if one is refused, the ones already submitted are withdrawn. */
  const submitAll = (listener: (k: number) => RequestListener) => {
    for (let k = 0; k < job.choices; k++) {
      try {
        start(engineId(k), plans[k]!.tokens, listener(k));
      } catch (error) {
        for (let j = 0; j < k; j++) driver.abort(engineId(j));
        throw submitError(error);
      }
    }
  };

  if (!job.stream) {
    return new Promise((resolve, reject) => {
      // The response closing before the answer means the client is gone: abort the request.
      const onClose = () => {
        if (done) return;
        abortAll();
        resolve(undefined);
      };
      try {
        submitAll((k) => ({
          onFinish(finish) {
            finishes[k] = finish;
            if (--remaining > 0) return;
            done = true;
            reply.raw.off('close', onClose);
            const choices = plans.map((p, index) => ({
              index,
              text: generatedText(p.visible, ctx.textOffset + index),
              finish: p.finish,
            }));
            resolve(job.format.full(id, created, choices, usageOf(finishes as EngineFinish[])));
          },
        }));
      } catch (error) {
        reject(error);
        return;
      }
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
  let stalled = false;
  // Each choice's first token (or, with no visible text, its closing chunk) carries its timing.
  const timings: (PrebleTiming | undefined)[] = plans.map(() => undefined);
  const timed = (k: number, chunk: unknown) => {
    const t = timings[k];
    if (t === undefined) return chunk;
    timings[k] = undefined;
    return { ...(chunk as object), preble_timing: t };
  };
  submitAll((k) => ({
    onToken(index, first) {
      if (first !== undefined) timings[k] = { ...prebleTiming(first), ...timingExtra };
      if (index >= limit) {
        if (index === limit) ctx.faults.hold(raw);
        stalled = true;
        return;
      }
      // Characters of a stop string (and after) are never sent.
      if (index < plans[k]!.visible)
        write(
          timed(
            k,
            job.format.token(id, created, k, String.fromCodePoint(generatedToken(index, ctx.textOffset + k))),
          ),
        );
    },
    onFinish(finish) {
      finishes[k] = finish;
      remaining--;
      if (stalled) {
        if (remaining === 0) done = true;
        return;
      }
      write(timed(k, job.format.closing(id, created, k, plans[k]!.finish)));
      if (remaining > 0) return;
      done = true;
      if (job.includeUsage) write(job.format.usage(id, created, usageOf(finishes as EngineFinish[])));
      if (!raw.destroyed && !raw.writableEnded) raw.end('data: [DONE]\n\n');
    },
  }));
  reply.hijack();
  raw.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  for (let k = 0; k < job.choices; k++) for (const chunk of job.format.opening(id, created, k)) write(chunk);
  raw.on('close', abortAll);
  return Promise.resolve(reply);
}

/**
 * `preble engine`'s timing of one choice, on the chunk of its first token: wall-clock milliseconds
 * from submission to admission into a batch (`queue_ms`) and from admission to the first token
 * (`prefill_ms`). The gateway's `preble` dialect reads `prefill_ms` to date the admission.
 */
export interface PrebleTiming {
  readonly queue_ms: number;
  readonly prefill_ms: number;
}

function prebleTiming(first: FirstTokenTiming): PrebleTiming {
  const ms = (s: number) => Math.round(s * 1e6) / 1e3;
  return { queue_ms: ms(first.queueSeconds), prefill_ms: ms(first.prefillSeconds) };
}

function submitError(error: unknown): HttpError {
  const message = error instanceof Error ? error.message : String(error);
  if (message.includes('KV tokens')) {
    return new HttpError(400, message.replace(/^engine: /, ''), null, 'context_length_exceeded');
  }
  return new HttpError(500, message, null, null, 'server_error');
}
