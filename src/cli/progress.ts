import cliProgress from 'cli-progress';

export interface Progress {
  /** Requests finished so far over all runs: the base the current run's count adds to. */
  offset(): number;
  update(finished: number): void;
  stop(): void;
}

/**
 * A progress bar on stderr for long runs; silent when stderr is not a terminal (logs, CI, pipes).
 * `label` names what is being done (default: simulating), `unit` what is counted (default: requests).
 */
export function createProgress(total: number, label = 'simulating', unit = 'requests'): Progress {
  let value = 0;
  const bar = process.stderr.isTTY
    ? new cliProgress.SingleBar(
        {
          stream: process.stderr,
          format: `${label} [{bar}] {value}/{total} ${unit} | {eta_formatted} left`,
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  bar?.start(total, 0);
  return {
    offset: () => value,
    update: (finished) => {
      value = finished;
      bar?.update(finished);
    },
    stop: () => bar?.stop(),
  };
}
