import { Temporal } from "temporal-polyfill";
import { DefinitionError } from "../model/errors.ts";

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const LOCAL_RE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?$/;
const OFFSET_RE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)(?:\[[^\]]+\])?$/;

function show(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

/** A strict YYYY-MM-DD that exists in the calendar (2028-02-29 yes, 2027-02-29 no); returned as given. */
export function parseBusinessDate(s: string): string {
  if (typeof s !== "string" || !DATE_RE.test(s)) {
    throw new DefinitionError(`bad date ${show(s)} (expected YYYY-MM-DD)`);
  }
  const [year, month, day] = s.split("-").map(Number) as [number, number, number];
  const date = utcDate(year, month, day);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    throw new DefinitionError(`bad date ${show(s)}: not a calendar date (expected YYYY-MM-DD)`);
  }
  return s;
}

const zoneCache = new Map<string, string>();

/**
 * An IANA zone name ("Europe/London", "UTC"), returned with its case normalised ("utc" -> "UTC").
 * Fixed offsets like "+01:00" are refused: they have no DST rules, so a schedule written with one
 * silently drifts by an hour for half the year in any real place.
 */
export function assertTimeZone(tz: string): string {
  const cached = typeof tz === "string" ? zoneCache.get(tz) : undefined;
  if (cached !== undefined) return cached;
  if (typeof tz !== "string" || tz === "" || /^[+\-\d]/.test(tz)) {
    throw new DefinitionError(`unknown time zone ${show(tz)} (expected an IANA name such as "Europe/London" or "UTC")`);
  }
  let id: string;
  try {
    id = Temporal.Instant.fromEpochMilliseconds(0).toZonedDateTimeISO(tz).timeZoneId;
  } catch {
    throw new DefinitionError(`unknown time zone ${show(tz)}`);
  }
  zoneCache.set(tz, id);
  return id;
}

export function toZoned(ms: number, timezone: string): Temporal.ZonedDateTime {
  return Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO(timezone);
}

/** Per zone, the last local date asked and the instants it spans: most asks fall in it again. */
const lastDates = new Map<string, { date: string; from: number; to: number }>();

/** The local calendar date (YYYY-MM-DD) of an instant in a zone. */
export function localDate(ms: number, timezone: string): string {
  const last = lastDates.get(timezone);
  if (last && ms >= last.from && ms < last.to) return last.date;
  const date = toZoned(ms, timezone).toPlainDate().toString();
  if (lastDates.size >= 1_000) lastDates.clear();
  lastDates.set(timezone, { date, from: startOfDay(date, timezone), to: startOfDay(addDays(date, 1), timezone) });
  return date;
}

const startCache = new Map<string, number>();

/**
 * The first instant of a local date. Usually 00:00, but 01:00 where midnight falls in a DST gap
 * (America/Sao_Paulo 2018-11-04), and the start of the next day for a date the zone skipped
 * entirely (Pacific/Apia 2011-12-30). Memoised because every calendar timetable step needs it and
 * Temporal's zone arithmetic is comparatively slow.
 */
export function startOfDay(date: string | Temporal.PlainDate, timezone: string): number {
  const key = `${timezone}|${String(date)}`;
  const hit = startCache.get(key);
  if (hit !== undefined) return hit;
  const plain = typeof date === "string" ? Temporal.PlainDate.from(date) : date;
  const ms = plain.toZonedDateTime(timezone).epochMilliseconds;
  if (startCache.size >= 100_000) startCache.clear();
  startCache.set(key, ms);
  return ms;
}

/**
 * An instant from user input: an ISO instant with Z or an offset, or a local date-time
 * ("YYYY-MM-DDTHH:MM[:SS]", a space works too) or date ("YYYY-MM-DD", meaning its start of day)
 * read in `timezone`. A local time in a DST gap moves forward; one that occurs twice takes the
 * first occurrence (Temporal's "compatible").
 */
export function parseInstant(s: string, timezone: string): number {
  const tz = assertTimeZone(timezone);
  const bad = (why = "") =>
    new DefinitionError(
      `bad instant ${show(s)}${why} (expected YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS] in ${tz}, or an ISO instant with Z or an offset)`,
    );
  if (typeof s !== "string") throw bad();
  const text = s.trim();
  if (DATE_RE.test(text)) {
    try {
      parseBusinessDate(text);
    } catch {
      throw bad(": not a calendar date");
    }
    return startOfDay(text, tz);
  }
  if (LOCAL_RE.test(text)) {
    let local: Temporal.PlainDateTime;
    try {
      local = Temporal.PlainDateTime.from(text.replace(" ", "T"));
    } catch {
      throw bad(": not a calendar date and time");
    }
    return local.toZonedDateTime(tz, { disambiguation: "compatible" }).epochMilliseconds;
  }
  if (OFFSET_RE.test(text)) {
    try {
      return Temporal.Instant.from(text.replace(" ", "T")).epochMilliseconds;
    } catch {
      throw bad(": not a calendar date and time");
    }
  }
  throw bad();
}

export function addDays(date: string, n: number): string {
  parseBusinessDate(date);
  if (!Number.isInteger(n)) throw new RangeError(`addDays: ${n} is not a whole number of days`);
  const [year, month, day] = date.split("-").map(Number) as [number, number, number];
  const sum = utcDate(year, month, day + n);
  const y = sum.getUTCFullYear();
  // Beyond four-digit years Temporal's signed, six-digit form is the one it has always given.
  if (y < 0 || y > 9999) return Temporal.PlainDate.from(date).add({ days: n }).toString();
  return `${String(y).padStart(4, "0")}-${String(sum.getUTCMonth() + 1).padStart(2, "0")}-${String(sum.getUTCDate()).padStart(2, "0")}`;
}

/**
 * A calendar date as a UTC instant, days past the month's end rolling over. Plain Date arithmetic:
 * the scrape, the checker and the planners step through dates often, and Temporal's cost adds up.
 * setUTCFullYear, unlike Date.UTC, leaves years 0-99 as they are.
 */
function utcDate(year: number, month: number, day: number): Date {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date;
}

/** Every date from `from` to `to`, both included; empty when `to` is before `from`. */
export function datesBetween(from: string, to: string): string[] {
  parseBusinessDate(from);
  parseBusinessDate(to);
  const out: string[] = [];
  let d = Temporal.PlainDate.from(from);
  const end = Temporal.PlainDate.from(to);
  while (Temporal.PlainDate.compare(d, end) <= 0) {
    out.push(d.toString());
    d = d.add({ days: 1 });
  }
  return out;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

/**
 * "2026-09-02 02:00", with ":SS" (and ".mmm") only when non-zero. On a wall-clock time that occurs
 * twice (the repeated hour when clocks go back) the offset is appended, "2026-11-01 01:30-05:00",
 * because the bare time would not say which of the two is meant.
 */
export function formatLocal(ms: number, timezone: string): string {
  const z = toZoned(ms, timezone);
  let text = `${z.toPlainDate().toString()} ${pad(z.hour)}:${pad(z.minute)}`;
  if (z.second !== 0 || z.millisecond !== 0) text += `:${pad(z.second)}`;
  if (z.millisecond !== 0) text += `.${pad(z.millisecond, 3)}`;
  const wall = z.toPlainDateTime();
  const earlier = wall.toZonedDateTime(timezone, { disambiguation: "earlier" }).epochMilliseconds;
  const later = wall.toZonedDateTime(timezone, { disambiguation: "later" }).epochMilliseconds;
  if (earlier !== later) text += z.offset;
  return text;
}

/** "2026-09-02 02:00 Europe/London" (see formatLocal for seconds and repeated times). */
export function formatInstant(ms: number, timezone: string): string {
  return `${formatLocal(ms, timezone)} ${timezone}`;
}
