import type { Random } from '../core/random.ts';

/**
 * Interleaves sessions (agent chains, questions about one document): `active` sessions are open at
 * once, each draw takes the next item of one chosen uniformly at random, and a finished session is
 * replaced by a fresh one from `open`. Items of one session keep their order, memory stays bounded by
 * the open sessions, and the stream never ends. `open(k)` gets the session's serial number k.
 */
export function* interleaveSessions<T>(
  active: number,
  random: Random,
  open: (serial: number) => Iterator<T>,
): Generator<T, never> {
  if (!Number.isInteger(active) || active < 1) throw new Error(`active sessions must be >= 1, got ${active}`);
  let opened = 0;
  const slots: Iterator<T>[] = [];
  for (let i = 0; i < active; i++) slots.push(open(opened++));
  for (;;) {
    const slot = random.int(0, active - 1);
    let item = slots[slot]!.next();
    if (item.done) {
      slots[slot] = open(opened++);
      item = slots[slot]!.next();
      if (item.done) throw new Error('a session must yield at least one item');
    }
    yield item.value;
  }
}
