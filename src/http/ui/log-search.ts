import type { Engine } from "../../engine/engine.ts";
import { escapeHtml, raw, type Html } from "./html.ts";

/** The log is read this much at a time: a 50,000-line log is a few of these. */
const READ_BYTES = 1024 * 1024;
/** Hits listed; the count goes on past it. */
export const MAX_HITS = 200;
/** A hit's link opens the log this many lines before it, so the lines leading to it show too. */
const CONTEXT_LINES = 5;
/** A hit's line is shown up to this many characters. */
const HIT_CHARS = 400;

export interface LogHit {
  /** 1-based line number. */
  line: number;
  /** The byte offset where the log page of this hit starts (a few lines before it). */
  pageOffset: number;
  text: string;
}

export interface LogSearch {
  query: string;
  hits: LogHit[];
  /** Every matching line, listed or not. */
  total: number;
  lines: number;
}

/**
 * Every line of one attempt's log that contains `query` (case-insensitive), read from the file
 * in ranges on the server: the browser never downloads the log to search it.
 */
export async function searchLog(engine: Engine, runId: string, taskId: string, tryNumber: number, query: string): Promise<LogSearch> {
  const needle = query.toLowerCase();
  const hits: LogHit[] = [];
  let total = 0;
  let line = 0;
  const recentStarts: number[] = [];
  const test = (bytes: Buffer, start: number) => {
    line++;
    recentStarts.push(start);
    if (recentStarts.length > CONTEXT_LINES + 1) recentStarts.shift();
    const text = bytes.toString("utf8");
    if (!text.toLowerCase().includes(needle)) return;
    total++;
    if (hits.length < MAX_HITS) hits.push({ line, pageOffset: recentStarts[0]!, text: text.length > HIT_CHARS ? `${text.slice(0, HIT_CHARS)}…` : text });
  };
  let offset = 0;
  let carry = Buffer.alloc(0);
  let carryStart = 0;
  for (;;) {
    const range = await engine.logRange(runId, taskId, tryNumber, { offset, length: READ_BYTES });
    const buffer = carry.length ? Buffer.concat([carry, range.bytes]) : range.bytes;
    let start = 0;
    for (let newline = buffer.indexOf(10); newline >= 0; newline = buffer.indexOf(10, start)) {
      test(buffer.subarray(start, newline), carryStart + start);
      start = newline + 1;
    }
    carry = Buffer.from(buffer.subarray(start));
    carryStart += start;
    offset += range.bytes.length;
    if (range.bytes.length < READ_BYTES || offset >= range.size) break;
  }
  if (carry.length) test(carry, carryStart);
  return { query, hits, total, lines: line };
}

/** Log text with every occurrence of `query` (case-insensitive) marked; everything else escaped. */
export function highlight(text: string, query: string): Html {
  if (!query) return raw(escapeHtml(text));
  const lower = text.toLowerCase();
  const needle = query.toLowerCase();
  let out = "";
  let from = 0;
  // Lower-casing keeps the length of the text it searches only for most scripts; where it does not, nothing is marked.
  if (lower.length !== text.length) return raw(escapeHtml(text));
  for (let at = lower.indexOf(needle); at >= 0 && needle; at = lower.indexOf(needle, at + needle.length)) {
    out += `${escapeHtml(text.slice(from, at))}<mark>${escapeHtml(text.slice(at, at + needle.length))}</mark>`;
    from = at + needle.length;
  }
  return raw(out + escapeHtml(text.slice(from)));
}
