/** The intrusive links a node carries to sit in an `LruList` (kept in the node's own payload). */
export interface LruLinks<T> {
  prev: T | null;
  next: T | null;
  inLru: boolean;
}

/**
 * An intrusive doubly linked list, least recently used at the head: O(1) append, insert-after and
 * removal, no allocation. Nodes carry their own links in `data`, so a node is in at most one list.
 */
export class LruList<T extends { data: LruLinks<T> }> {
  head: T | null = null;
  tail: T | null = null;
  size = 0;

  /** Add `node` as the most recently used. */
  append(node: T): void {
    this.link(node, this.tail, null);
  }

  /** Put `node` right after `anchor` (which must be in the list). */
  insertAfter(anchor: T, node: T): void {
    this.link(node, anchor, anchor.data.next);
  }

  remove(node: T): void {
    const d = node.data;
    if (!d.inLru) throw new Error('LRU: node is not in the list');
    if (d.prev === null) this.head = d.next;
    else d.prev.data.next = d.next;
    if (d.next === null) this.tail = d.prev;
    else d.next.data.prev = d.prev;
    d.prev = null;
    d.next = null;
    d.inLru = false;
    this.size--;
  }

  /** Nodes from least to most recently used (tests and checks; never on a hot path). */
  *values(): Generator<T> {
    for (let n = this.head; n !== null; n = n.data.next) yield n;
  }

  private link(node: T, prev: T | null, next: T | null): void {
    const d = node.data;
    if (d.inLru) throw new Error('LRU: node is already in the list');
    d.prev = prev;
    d.next = next;
    d.inLru = true;
    if (prev === null) this.head = node;
    else prev.data.next = node;
    if (next === null) this.tail = node;
    else next.data.prev = node;
    this.size++;
  }
}
