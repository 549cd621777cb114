import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { TokenBucket } from './rate-limit.ts';

export interface ClientKey {
  readonly name: string;
  readonly key: string;
  readonly ratePerSecond?: number | undefined;
  readonly burst?: number | undefined;
}

interface StoredKey {
  readonly name: string;
  readonly bucket: TokenBucket | undefined;
  readonly ratePerSecond: number | undefined;
}

export type KeyCheck =
  | { readonly ok: true; readonly name: string | undefined }
  | {
      readonly ok: false;
      readonly status: 401 | 429;
      readonly message: string;
      readonly retryAfterSeconds?: number;
    };

const digest = (key: string) => createHash('sha256').update(key).digest('hex');

/** The bearer token of an Authorization header, or undefined. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value);
  return match?.[1];
}

/**
 * Client API keys, held only as SHA-256 digests (a leaked heap dump or log shows no key), each
 * with an optional token-bucket rate limit. Authentication is on once any key was configured or
 * added, and stays on when every key is revoked (an empty store then refuses everyone).
 */
export class KeyStore {
  private readonly keys = new Map<string, StoredKey>();
  private enabled: boolean;

  constructor(
    initial: readonly ClientKey[],
    private readonly now: () => number,
  ) {
    this.enabled = initial.length > 0;
    for (const k of initial) this.add(k);
  }

  get required(): boolean {
    return this.enabled;
  }

  names(): { name: string; ratePerSecond: number | undefined }[] {
    return [...this.keys.values()].map((k) => ({ name: k.name, ratePerSecond: k.ratePerSecond }));
  }

  /** Add a key (a random one when none is given); answers the key, which is never shown again. */
  add(spec: Omit<ClientKey, 'key'> & { key?: string | undefined }): string {
    if ([...this.keys.values()].some((k) => k.name === spec.name))
      throw new Error(`a key named '${spec.name}' exists already`);
    const key = spec.key ?? `pk-${randomBytes(24).toString('base64url')}`;
    const rate = spec.ratePerSecond;
    this.keys.set(digest(key), {
      name: spec.name,
      ratePerSecond: rate,
      bucket:
        rate === undefined ? undefined : new TokenBucket(rate, spec.burst ?? Math.max(1, rate), this.now()),
    });
    this.enabled = true;
    return key;
  }

  /** Revoke by name; false if there was none. */
  revoke(name: string): boolean {
    for (const [hash, k] of this.keys) {
      if (k.name === name) {
        this.keys.delete(hash);
        return true;
      }
    }
    return false;
  }

  /** Is this token a client key (regardless of rate)? */
  isClientKey(token: string): boolean {
    return this.keys.has(digest(token));
  }

  check(authorization: string | string[] | undefined): KeyCheck {
    if (!this.enabled) return { ok: true, name: undefined };
    const token = bearerToken(authorization);
    if (token === undefined)
      return { ok: false, status: 401, message: 'missing API key: send Authorization: Bearer <key>' };
    const stored = this.keys.get(digest(token));
    if (stored === undefined) return { ok: false, status: 401, message: 'invalid API key' };
    const wait = stored.bucket?.take(this.now()) ?? 0;
    if (wait > 0)
      return {
        ok: false,
        status: 429,
        message: `rate limit of ${stored.ratePerSecond} requests/s exceeded for key '${stored.name}'`,
        retryAfterSeconds: Math.max(1, Math.ceil(wait)),
      };
    return { ok: true, name: stored.name };
  }
}

/** Constant-time comparison of a presented token with the admin key. */
export function isAdminKey(token: string | undefined, adminKey: string): boolean {
  if (token === undefined) return false;
  const a = Buffer.from(digest(token));
  const b = Buffer.from(digest(adminKey));
  return timingSafeEqual(a, b);
}
