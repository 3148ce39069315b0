import { DefinitionError } from "../model/errors.ts";

const UNIT_MS = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const;
type Unit = keyof typeof UNIT_MS;
const UNIT_ORDER: readonly Unit[] = ["d", "h", "m", "s", "ms"];

// "ms" must be tried before "m" or "5ms" would read as 5 minutes followed by garbage.
const PART = /(\d+(?:\.\d+)?)\s*(ms|d|h|m|s)(?![a-z])/y;
const EXPECTED = "(expected e.g. 500ms, 30s, 5m, 1h30m, 2d)";

/**
 * Milliseconds from a number (already ms) or a string of unit parts such as "1h30m" or "1h 30m".
 * Units must appear largest first and at most once, so a typo like "1m30m" is an error rather
 * than a silent 31 minutes. A bare string number is rejected: "500" could mean ms or seconds.
 */
export function parseDuration(input: string | number, what = "duration"): number {
  if (typeof input === "number") {
    if (Number.isFinite(input) && input >= 0) return input;
    throw new DefinitionError(`bad ${what} ${String(input)} ${EXPECTED}`);
  }
  const bad = () => new DefinitionError(`bad ${what} ${JSON.stringify(input)} ${EXPECTED}`);
  if (typeof input !== "string") throw new DefinitionError(`bad ${what} ${String(input)} ${EXPECTED}`);
  const text = input.trim();
  if (text === "") throw bad();
  let total = 0;
  let pos = 0;
  let lastRank = -1;
  while (pos < text.length) {
    PART.lastIndex = pos;
    const m = PART.exec(text);
    if (!m) throw bad();
    const unit = m[2] as Unit;
    const rank = UNIT_ORDER.indexOf(unit);
    if (rank <= lastRank) throw bad();
    lastRank = rank;
    total += Number(m[1]) * UNIT_MS[unit];
    pos = PART.lastIndex;
    while (text[pos] === " ") pos++;
  }
  // Fractions like "1.5s" are fine, but a duration is a whole number of ms.
  total = Math.round(total);
  if (!Number.isSafeInteger(total)) throw bad();
  return total;
}

/** The shortest string parseDuration reads back as the same (rounded) ms, e.g. "1h30m". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  let rest = Math.round(Math.abs(ms));
  if (rest === 0) return "0ms";
  let out = "";
  for (const unit of UNIT_ORDER) {
    const n = Math.floor(rest / UNIT_MS[unit]);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * UNIT_MS[unit];
    }
  }
  return ms < 0 ? `-${out}` : out;
}
