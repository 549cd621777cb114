import { InvalidArgumentError } from 'commander';

/** Option parsers that turn bad input into one clear line (commander prints it and exits non-zero). */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new InvalidArgumentError(`expected a positive integer, got '${value}'`);
  return n;
}

export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError(`expected a non-negative integer, got '${value}'`);
  return n;
}

export function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw new InvalidArgumentError(`expected a positive number, got '${value}'`);
  return n;
}

export function nonNegativeNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0)
    throw new InvalidArgumentError(`expected a non-negative number, got '${value}'`);
  return n;
}

/** A repeatable option's values in the order given (commander's accumulator). */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
