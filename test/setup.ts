import fc from 'fast-check';

// Property tests are deterministic: one fixed seed for every run (set FC_SEED to explore others).
fc.configureGlobal({ seed: Number(process.env['FC_SEED'] ?? 20241121) });
