import type { RouteKind } from './forward.ts';

/** The fields of an upstream SSE chunk the aggregation reads (OpenAI completions and chat chunks). */
export interface UpstreamChunk {
  readonly id?: unknown;
  readonly object?: unknown;
  readonly created?: unknown;
  readonly model?: unknown;
  readonly system_fingerprint?: unknown;
  readonly choices?: readonly ChunkChoice[] | null;
  readonly usage?: unknown;
  readonly timings?: unknown;
  readonly error?: unknown;
}

interface ChunkChoice {
  readonly index?: unknown;
  readonly text?: unknown;
  readonly delta?: { readonly role?: unknown; readonly content?: unknown } | null;
  readonly finish_reason?: unknown;
  readonly stop_reason?: unknown;
}

interface ChoiceState {
  text: string;
  role: string;
  finish: unknown;
  stopReason: unknown;
}

/** True when the chunk carries generated text or a choice's end: the replica has produced output. */
export function carriesOutput(chunk: UpstreamChunk): boolean {
  for (const c of chunk.choices ?? []) {
    if (typeof c.text === 'string' && c.text.length > 0) return true;
    const content = c.delta?.content;
    if (typeof content === 'string' && content.length > 0) return true;
    if (c.finish_reason !== null && c.finish_reason !== undefined) return true;
  }
  return false;
}

/**
 * Builds the non-streamed OpenAI answer from the SSE chunks of a streamed one: text (completions) or
 * message content (chat) per choice index, each choice's finish_reason, the usage chunk, and the
 * response's id, model, created and system_fingerprint as the replica gave them.
 */
export class StreamAggregator {
  private readonly choices = new Map<number, ChoiceState>();
  private readonly head: Record<string, unknown> = {};
  private usage: unknown;
  private timings: unknown;

  constructor(private readonly kind: RouteKind) {}

  push(chunk: UpstreamChunk): void {
    for (const key of ['id', 'created', 'model', 'system_fingerprint'] as const) {
      const v = chunk[key];
      if (v !== undefined && v !== null && this.head[key] === undefined) this.head[key] = v;
    }
    if (chunk.usage !== undefined && chunk.usage !== null) this.usage = chunk.usage;
    if (chunk.timings !== undefined && chunk.timings !== null) this.timings = chunk.timings;
    for (const c of chunk.choices ?? []) {
      const index = typeof c.index === 'number' ? c.index : 0;
      let state = this.choices.get(index);
      if (state === undefined) {
        state = { text: '', role: 'assistant', finish: null, stopReason: undefined };
        this.choices.set(index, state);
      }
      if (this.kind === 'completions') {
        if (typeof c.text === 'string') state.text += c.text;
      } else {
        if (typeof c.delta?.content === 'string') state.text += c.delta.content;
        if (typeof c.delta?.role === 'string') state.role = c.delta.role;
      }
      if (c.finish_reason !== null && c.finish_reason !== undefined) state.finish = c.finish_reason;
      if (c.stop_reason !== undefined) state.stopReason = c.stop_reason;
    }
  }

  /** The answer a non-streamed request gets. */
  result(): Record<string, unknown> {
    const indices = [...this.choices.keys()].sort((a, b) => a - b);
    const choices = indices.map((index) => {
      const s = this.choices.get(index)!;
      const extra = s.stopReason === undefined ? {} : { stop_reason: s.stopReason };
      return this.kind === 'completions'
        ? { index, text: s.text, logprobs: null, finish_reason: s.finish, ...extra }
        : {
            index,
            message: { role: s.role, content: s.text },
            logprobs: null,
            finish_reason: s.finish,
            ...extra,
          };
    });
    const out: Record<string, unknown> = {
      ...(this.head['id'] === undefined ? {} : { id: this.head['id'] }),
      object: this.kind === 'completions' ? 'text_completion' : 'chat.completion',
      ...(this.head['created'] === undefined ? {} : { created: this.head['created'] }),
      ...(this.head['model'] === undefined ? {} : { model: this.head['model'] }),
      ...(this.head['system_fingerprint'] === undefined
        ? {}
        : { system_fingerprint: this.head['system_fingerprint'] }),
      choices,
    };
    if (this.usage !== undefined) out['usage'] = this.usage;
    if (this.timings !== undefined) out['timings'] = this.timings;
    return out;
  }
}
