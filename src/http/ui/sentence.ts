import { parseInstant } from "../../core/time/dates.ts";
import { escapeHtml, raw, type Html } from "./html.ts";
import { at } from "./parts.ts";

/**
 * An instant as the engine writes it inside a sentence: `formatInstant`'s "2026-11-17 06:00
 * Europe/London" (seconds, milliseconds and a repeated hour's offset optional), or an ISO instant
 * "2026-11-17T06:00:00.000Z". A business date alone ("2026-11-16") is a name, never matched.
 */
const INSTANT = /(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?)([+-]\d{2}:\d{2})? ((?:[A-Za-z_]+(?:\/[A-Za-z0-9_+-]+)+)|UTC|GMT)(?![\w/])|(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?Z)/g;

/**
 * An engine sentence (a why line, an incident's message) with each instant in it made a `<time
 * data-t>`, so the page script writes it in the zone the page shows like every other timestamp.
 */
export function sentence(text: string): Html {
  let out = "";
  let from = 0;
  for (const match of text.matchAll(INSTANT)) {
    const ms = instantOf(match);
    if (ms === null) continue;
    out += escapeHtml(text.slice(from, match.index)) + String(at(ms, /:\d{2}:\d{2}/.test(match[0])));
    from = match.index + match[0].length;
  }
  return raw(out + escapeHtml(text.slice(from)));
}

function instantOf(match: RegExpMatchArray): number | null {
  const [, date, time, offset, zone, iso] = match;
  try {
    if (iso) return parseInstant(iso, "UTC");
    const zoneName = zone === "GMT" ? "UTC" : zone!;
    return offset ? parseInstant(`${date}T${time}${offset}`, zoneName) : parseInstant(`${date} ${time}`, zoneName);
  } catch {
    return null; // not a zone or not a time: the words stay as they are
  }
}
