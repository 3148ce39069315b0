import { fixedClock, offsetClock, type Clock } from "../core/model/clock.ts";
import { UsageError } from "../core/model/errors.ts";
import { NOW_FORMAT, parseNowInstant } from "./flags.ts";

/** A clock that is not the system's, and how what is recorded under it names it. */
export interface TestClock {
  clock: Clock;
  /** "test clock from 2026-09-02T03:00:00.000Z (IDEM_NOW)": what runs and audit entries made under it carry. */
  note: string;
  /** The line the process starts with. */
  announce: string;
}

/**
 * The test clock a command runs under: `--now` (already parsed), else IDEM_NOW, else none (the
 * system clock). "fixed" for a command that reads once (`next`, `expected`), "advancing" for one
 * that runs work or keeps running (`run`, `scheduler`, `dev`). Announced on stderr (a long-running
 * process logs it instead), so that nobody mistakes its answers for the real time's.
 */
export function testClock(flag: number | undefined, kind: "fixed" | "advancing"): TestClock | undefined {
  let at = flag;
  let source = "--now";
  if (at === undefined) {
    const env = process.env.IDEM_NOW;
    if (env === undefined || env.trim() === "") return undefined;
    const parsed = parseNowInstant(env);
    if (parsed === null) throw new UsageError(`IDEM_NOW ${JSON.stringify(env)}: expected ${NOW_FORMAT}`);
    at = parsed;
    source = "IDEM_NOW";
  }
  const iso = new Date(at).toISOString();
  if (kind === "fixed") {
    const note = `test clock at ${iso} (${source})`;
    return { clock: fixedClock(at), note, announce: `${note}, not the system clock` };
  }
  const note = `test clock from ${iso} (${source})`;
  return { clock: offsetClock(at), note, announce: `${note}, not the system clock: runs and audit entries made under it say so` };
}
