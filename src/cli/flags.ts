import { UsageError } from "../core/model/errors.ts";

/** A flag's value as a whole number of at least `min`, or a usage error naming the flag. */
export function wholeNumber(text: string, flag: string, min = 1): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${flag} ${text}: expected a whole number >= ${min}`);
  return n;
}

/** For repeatable flags: `-p a=1 -p b=2`. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/**
 * The flag that gives an engine argument: `maxActiveRuns` -> `--max-active-runs`. The engine names
 * arguments in its own words (`ArgumentError`); the CLI prints them as the flags a user types.
 */
export function flagOf(argument: string): string {
  return `--${argument.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}
