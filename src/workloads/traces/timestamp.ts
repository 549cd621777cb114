/**
 * A wall-clock timestamp split into whole seconds and nanoseconds, so that differences are exact:
 * `Date` keeps only milliseconds, and 100 ns ticks since 1970 overflow a double's integers.
 */
export interface PreciseTime {
  readonly seconds: number;
  readonly nanos: number;
}

const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:(Z)|([+-])(\d{2}):?(\d{2}))?$/;

/**
 * Parses `YYYY-MM-DD HH:MM:SS[.fraction][Z|±HH:MM]` (the Azure traces: 2023 has 7 fractional digits
 * and no zone, 2024 has `+00:00`). A missing zone means UTC; only differences matter anyway.
 */
export function parseTimestamp(text: string): PreciseTime {
  const match = TIMESTAMP.exec(text.trim());
  if (match === null) throw new Error(`invalid timestamp '${text}' (expected YYYY-MM-DD HH:MM:SS.fraction)`);
  const [, year, month, day, hour, minute, second, fraction, , sign, zoneHours, zoneMinutes] = match;
  const days = Date.UTC(Number(year), Number(month) - 1, Number(day)) / 86_400_000;
  const zoneSeconds =
    sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(zoneHours) * 3600 + Number(zoneMinutes) * 60);
  return {
    seconds: days * 86_400 + Number(hour) * 3600 + Number(minute) * 60 + Number(second) - zoneSeconds,
    nanos: fraction === undefined ? 0 : Number(fraction.padEnd(9, '0')),
  };
}

/**
 * `later - earlier` in seconds, correctly rounded: the nanosecond difference is an exact integer
 * for spans up to 104 days, so the one division gives the double nearest the decimal value.
 */
export function secondsBetween(earlier: PreciseTime, later: PreciseTime): number {
  const wholeSeconds = later.seconds - earlier.seconds;
  const nanos = wholeSeconds * 1e9 + (later.nanos - earlier.nanos);
  return Number.isSafeInteger(nanos) ? nanos / 1e9 : wholeSeconds + (later.nanos - earlier.nanos) / 1e9;
}
