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
