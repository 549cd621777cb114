/** The `advice:` section of the gateway config (docs/gateway.md, "Live advice"); off unless given. */
import { z } from 'zod';

const seconds = z.number().positive();

export const adviceSchema = z
  .object({
    /** Policy-clock seconds between recommendations (the replicas' seconds, as ticks). */
    intervalSeconds: seconds.default(30),
    /** Policy-clock seconds of traffic the recommendation is made from. */
    windowSeconds: seconds.default(300),
    /** Targets in seconds the capacity per replica is measured against. */
    slo: z.object({ ttft: seconds, tpot: seconds }).strict(),
    /** Share of requests that must meet both targets for a rate to count (DistServe's goodput). */
    target: z.number().gt(0).max(1).default(0.9),
    /** Replicas = ceil(rate x headroom / capacity): above 1 leaves room for bursts. */
    headroom: z.number().min(1).default(1.2),
    /** Start and stop the llama.cpp replicas this gateway started itself (`--llama-replicas`). */
    act: z.boolean().default(false),
    /** Bounds on the replicas the gateway owns, per role, when it acts. */
    min: z.number().int().nonnegative().default(1),
    max: z.number().int().positive().default(8),
  })
  .strict()
  .refine((a) => a.min <= a.max, { message: 'min must not exceed max', path: ['min'] });

export type AdviceConfig = z.infer<typeof adviceSchema>;
