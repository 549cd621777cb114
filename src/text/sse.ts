/** One server-sent event as received: its raw text (to forward as is) and its `data:` payload. */
export interface SseEvent {
  readonly raw: string;
  /** The payload after `data: `, trimmed; '' for an event without one. */
  readonly data: string;
}

/**
 * Splits a byte stream into server-sent events. Chunks may cut an event anywhere; an event is
 * complete at its blank line. `rest` is whatever trailed the last complete event.
 */
export class SseSplitter {
  private buffer = '';
  // Streaming decode: a chunk may end inside a multi-byte character, whose bytes then wait for the next.
  private readonly decoder = new TextDecoder();

  push(chunk: string | Uint8Array): SseEvent[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    const events: SseEvent[] = [];
    let end = this.buffer.indexOf('\n\n');
    while (end >= 0) {
      const raw = this.buffer.slice(0, end + 2);
      this.buffer = this.buffer.slice(end + 2);
      events.push({ raw, data: raw.startsWith('data: ') ? raw.slice(6).trim() : '' });
      end = this.buffer.indexOf('\n\n');
    }
    return events;
  }

  get rest(): string {
    return this.buffer;
  }
}
