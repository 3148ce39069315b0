import { InvalidArgumentError, Option, type Command } from "commander";

/*
 * Parsers for numeric flags, given to commander with the option (`.option("--limit <n>", "how
 * many", positiveWholeNumber, 50)`): a bad value is refused before the command runs, with
 * commander's one line naming the flag and the value, and exit code 2.
 */

/** Digits only: `Number()` would also take "", " 5", "0x10" and "1e3". */
function parseWholeNumber(text: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = /^[0-9]+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new InvalidArgumentError(max === Number.MAX_SAFE_INTEGER ? `Expected a whole number >= ${min}.` : `Expected a whole number from ${min} to ${max}.`);
  }
  return n;
}

/** 0, 1, 2, ... */
export const wholeNumber = (text: string): number => parseWholeNumber(text, 0);

/** A whole number or "auto" (`--prefetch`). */
export function wholeNumberOrAuto(text: string): number | "auto" {
  if (text === "auto" || /^[0-9]+$/.test(text)) return text === "auto" ? "auto" : parseWholeNumber(text, 0);
  throw new InvalidArgumentError(`Expected a whole number >= 0 or "auto".`);
}

/** 1, 2, 3, ... */
export const positiveWholeNumber = (text: string): number => parseWholeNumber(text, 1);

/** A TCP port, 0 meaning any free one. */
export const port = (text: string): number => parseWholeNumber(text, 0, 65535);

export const NOW_FORMAT = "an instant with Z or an offset, like 2026-09-02T03:00:00Z";
const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

/** `--now <instant>`: a test clock (see test-clock.ts). */
export function nowInstant(text: string): number {
  const at = parseNowInstant(text);
  if (at === null) throw new InvalidArgumentError(`Expected ${NOW_FORMAT}.`);
  return at;
}

/** Epoch ms of an ISO instant with Z or an offset; null for anything else. */
export function parseNowInstant(text: string): number | null {
  const m = INSTANT.exec(text.trim());
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // Date.parse takes 2026-02-30 for 2026-03-02.
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return null;
  const at = Date.parse(text.trim());
  return Number.isFinite(at) ? at : null;
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

/** What a flag's value stands for, where a refusal should show how to type it. */
const VALUE_HINTS: Readonly<Record<string, string>> = { openFrozen: '"<reason>"' };

/** The flag as a user types it in answer to a refusal: `openFrozen` -> `--open-frozen "<reason>"`. */
export function flagAsTyped(argument: string): string {
  const hint = VALUE_HINTS[argument];
  return hint ? `${flagOf(argument)} ${hint}` : flagOf(argument);
}

/** How a long-running process logs (`--log-format`, `--log-level`), as `daemon.ts` takes them. */
export interface LogFlags {
  logFormat: "pretty" | "json";
  logLevel: "debug" | "info" | "warn" | "error";
}

/** `--log-format pretty|json` and `--log-level`: every long-running command declares them. */
export function withLogFlags(command: Command): Command {
  return command
    .addOption(new Option("--log-format <format>", "the process's log on stdout: pretty (a line of text each) or json (a JSON object a line, for a log pipeline)").choices(["pretty", "json"]).default("pretty"))
    .addOption(new Option("--log-level <level>", "the least level written: debug (every attempt, tick and request), info, warn or error").choices(["debug", "info", "warn", "error"]).default("info"));
}
