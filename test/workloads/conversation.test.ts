import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { type ConversationOptions, conversation } from '../../src/workloads/conversation.ts';
import { createWorkload } from '../../src/workloads/registry.ts';
import { commonPrefix } from '../../src/workloads/stats.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { fingerprint, startsWith } from './helpers.ts';

const base = { rps: 10, seed: 7 };
const run = (options: Partial<ConversationOptions> & { requests: number }) => [
  ...conversation({ ...base, ...options }),
];

/** Requests by session id, in arrival order. */
function bySession(requests: readonly WorkloadRequest[]): Map<string, WorkloadRequest[]> {
  const sessions = new Map<string, WorkloadRequest[]>();
  for (const r of requests) {
    assert.ok(r.sessionId, `${r.id} has a session id`);
    const turns = sessions.get(r.sessionId) ?? [];
    turns.push(r);
    sessions.set(r.sessionId, turns);
  }
  return sessions;
}

const appOf = (sessionId: string) => Number(/app-(\d+)-/.exec(sessionId)?.[1]);
const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;

describe('conversation', () => {
  it('replays the same stream from the same seed, another from another seed', () => {
    const first = fingerprint(run({ requests: 300, instances: 2 }));
    assert.deepEqual(fingerprint(run({ requests: 300, instances: 2 })), first);
    assert.notDeepEqual(
      fingerprint(run({ requests: 300, instances: 2, seed: 8 })).map((r) => r.tokens),
      first.map((r) => r.tokens),
    );
  });

  it("each turn's prompt is the previous prompt, then that turn's answer, then a new user message", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 1, max: 12 }),
        fc.double({ min: 1, max: 6, noNaN: true }),
        fc.integer({ min: 0, max: 4 }),
        fc.integer({ min: 1, max: 800 }),
        fc.integer({ min: 4, max: 3000 }),
        (seed, activeSessions, meanTurns, systemPrompts, systemPromptTokens, maxContextTokens) => {
          const requests = run({
            requests: 60,
            seed,
            activeSessions,
            meanTurns,
            systemPrompts,
            systemPromptTokens,
            maxContextTokens,
          });
          for (const r of requests) assert.ok(r.tokens.length + r.outputTokens <= maxContextTokens);
          for (const turns of bySession(requests).values()) {
            for (let k = 1; k < turns.length; k++) {
              const previous = turns[k - 1]!;
              const next = turns[k]!;
              assert.ok(startsWith(next.tokens, previous.tokens));
              // The answer's tokens, then at least one token of the new user message.
              assert.ok(next.tokens.length >= previous.tokens.length + previous.outputTokens + 1);
            }
            // A later turn holds the earlier answers where they were: the answer block is drawn once.
            const last = turns[turns.length - 1]!;
            for (const turn of turns) assert.ok(startsWith(last.tokens, turn.tokens));
          }
        },
      ),
      { numRuns: 40, seed: 1 },
    );
  });

  it('shares a system prompt among the sessions of one application and with no other', () => {
    const requests = run({ requests: 1500, instances: 1, systemPrompts: 4, systemPromptTokens: 300 });
    const apps = new Map<number, WorkloadRequest[]>();
    for (const r of requests) {
      const app = appOf(r.sessionId!);
      apps.set(app, [...(apps.get(app) ?? []), r]);
    }
    assert.equal(apps.size, 4);
    const shared = new Map<number, number>();
    for (const [app, list] of apps) {
      assert.ok(new Set(list.map((r) => r.sessionId)).size > 1, `app ${app} has several sessions`);
      let prefix = list[0]!.tokens.length;
      for (const r of list) prefix = Math.min(prefix, commonPrefix(list[0]!.tokens, r.tokens));
      shared.set(app, prefix);
      assert.ok(prefix >= 20, `app ${app}: its sessions share ${prefix} tokens`);
    }
    // Across applications nothing is shared beyond a chance equal first token.
    for (const a of apps.keys())
      for (const b of apps.keys())
        if (a < b) assert.ok(commonPrefix(apps.get(a)![0]!.tokens, apps.get(b)![0]!.tokens) <= 1);
    // Without system prompts, two sessions share nothing.
    const bare = bySession(run({ requests: 300, instances: 1, systemPrompts: 0 }));
    const firsts = [...bare.values()].map((turns) => turns[0]!.tokens);
    for (let i = 1; i < firsts.length; i++) assert.ok(commonPrefix(firsts[0]!, firsts[i]!) <= 1);
    assert.ok([...bare.keys()].every((id) => /^conversation-session-\d+$/.test(id)));
  });

  it('scales its open sessions with the instances (100 per instance) unless given', () => {
    for (const instances of [1, 3]) {
      assert.deepEqual(
        fingerprint(run({ requests: 200, instances })),
        fingerprint(run({ requests: 200, instances: 7, activeSessions: 100 * instances })),
      );
    }
    assert.notDeepEqual(
      fingerprint(run({ requests: 200, instances: 1 })),
      fingerprint(run({ requests: 200, instances: 2 })),
    );
  });

  it('lands near LMSYS-Chat-1M: 2.0 turns, 69.5-token user messages, 214.5-token answers', () => {
    // One session at a time: sessions are consecutive runs; only the last may be cut short.
    const requests = run({ requests: 12_000, activeSessions: 1, systemPrompts: 0 });
    const sessions = [...bySession(requests).values()].slice(0, -1);
    const users: number[] = [];
    for (const turns of sessions) {
      turns.forEach((turn, k) => {
        const before = k === 0 ? 0 : turns[k - 1]!.tokens.length + turns[k - 1]!.outputTokens;
        users.push(turn.tokens.length - before);
      });
    }
    const near = (measured: number, target: number, what: string) =>
      assert.ok(Math.abs(measured / target - 1) <= 0.15, `${what}: ${measured} against ${target}`);
    near(mean(sessions.map((turns) => turns.length)), 2.0, 'turns per conversation');
    near(mean(users), 69.5, 'user message tokens');
    near(mean(requests.map((r) => r.outputTokens)), 214.5, 'answer tokens');
    const five = [...bySession(run({ requests: 12_000, activeSessions: 1, meanTurns: 5 })).values()];
    near(mean(five.slice(0, -1).map((turns) => turns.length)), 5, 'turns=5');
  });

  it('picks applications by Zipf popularity by default, evenly with uniform', () => {
    const share = (popularity: 'uniform' | 'zipf') => {
      const sessions = [...bySession(run({ requests: 4000, instances: 1, popularity })).keys()];
      const counts = new Array<number>(8).fill(0);
      for (const id of sessions) counts[appOf(id)]! += 1;
      return counts.map((c) => c / sessions.length);
    };
    const zipf = share('zipf');
    assert.ok(zipf[0]! > 0.25 && zipf[0]! > 3 * zipf[7]!, `zipf shares ${zipf}`);
    assert.ok(share('uniform').every((s) => s > 0.06 && s < 0.2));
  });

  it('rejects bad options with one clear line', () => {
    const bad: [Partial<ConversationOptions>, RegExp][] = [
      [{ activeSessions: 0 }, /activeSessions must be a positive integer, got 0/],
      [{ meanTurns: 0.5 }, /turns \(meanTurns\) must be a number >= 1, got 0.5/],
      [{ systemPrompts: -1 }, /systemPrompts must be a non-negative integer, got -1/],
      [{ systemPromptTokens: 1.5 }, /systemPromptTokens must be a positive integer, got 1.5/],
      [{ popularity: 'flat' as 'zipf' }, /popularity must be 'uniform' or 'zipf', got 'flat'/],
      [{ zipfExponent: 0 }, /zipfExponent must be a positive number, got 0/],
      [{ maxContextTokens: 3 }, /maxContext \(maxContextTokens\) must be an integer >= 4, got 3/],
      [{ instances: 0 }, /instances must be a positive integer, got 0/],
    ];
    for (const [options, message] of bad) assert.throws(() => run({ requests: 5, ...options }), message);
    const spec = (name: string) => () => createWorkload(name, { requests: 5, ...base });
    assert.throws(spec('conversation:turns=0.5'), /turns: expected a mean of at least 1, got '0.5'/);
    assert.throws(spec('conversation:systemPrompts=x'), /systemPrompts: expected a non-negative integer/);
    assert.throws(spec('conversation:foo=1'), /conversation takes sessions, turns, systemPrompts/);
  });

  it('takes its options by name in the registry', () => {
    const named = createWorkload('conversation:sessions=5,turns=3,systemPrompts=0,maxContext=2048', {
      requests: 100,
      ...base,
    });
    const direct = run({
      requests: 100,
      activeSessions: 5,
      meanTurns: 3,
      systemPrompts: 0,
      maxContextTokens: 2048,
    });
    assert.deepEqual(fingerprint([...named]), fingerprint(direct));
  });
});
