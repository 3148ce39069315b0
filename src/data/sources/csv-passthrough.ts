import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import { normalizeSchema } from "../schema.ts";
import type { CsvSpec } from "./source.ts";
import type { SqlValue } from "../sql.ts";
import type { TableColumn } from "../target.ts";

/**
 * When a CSV file already is what a bulk loader wants (declared columns, plain commas, a header
 * naming exactly those columns), its bytes can go straight to PostgreSQL's COPY, which parses
 * and type-checks every value itself; only the constant columns are appended to each record.
 * This skips a parse and a re-format, which on a small machine is most of the cost.
 * Returns the COPY column order, or null when the file must go through DuckDB instead.
 */
export async function passthroughColumns(source: CsvSpec, columns: readonly TableColumn[]): Promise<string[] | null> {
  if (!source.columns || !source.header || source.delimiter !== ",") return null;
  const constants = Object.keys(source.constants);
  const declared = normalizeSchema(source.columns, source.path).map((c) => c.name).filter((n) => !constants.includes(n));
  const header = await firstLine(source.path);
  if (header === null || header.includes('"')) return null;
  const names = header.replace(/\r$/, "").split(",");
  if (names.length !== declared.length || names.some((n, i) => n !== declared[i])) return null;
  const order = [...names, ...constants];
  const want = new Set(columns.map((c) => c.name));
  if (order.length !== want.size || order.some((n) => !want.has(n))) return null;
  return order;
}

async function firstLine(path: string): Promise<string | null> {
  const handle = await open(path, "r");
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const text = buffer.subarray(0, bytesRead);
    const end = text.indexOf(10);
    return end === -1 ? (bytesRead < buffer.length ? text.toString("utf8") : null) : text.subarray(0, end).toString("utf8");
  } finally {
    await handle.close();
  }
}

function csvField(value: SqlValue): string {
  if (value === null) return "";
  const text = typeof value === "boolean" ? (value ? "true" : "false") : String(value);
  return /[",\r\n]/.test(text) || text === "" ? `"${text.replaceAll('"', '""')}"` : text;
}

const NEWLINE = 10;
const CR = 13;
const QUOTE = 34;

/**
 * The file's records without the header, each with `,<constants>` appended and ending in "\n";
 * blank lines are dropped (as DuckDB does). Newlines inside quoted values are kept.
 * `onRecords` gets the running count.
 */
export async function* recordsWithConstants(path: string, constants: readonly SqlValue[], onRecords?: (n: number) => Promise<void> | void): AsyncGenerator<Buffer> {
  const suffix = Buffer.from(constants.map((v) => "," + csvField(v)).join("") + "\n");
  let header = true;
  let records = 0;
  let carry: Buffer = Buffer.alloc(0);
  for await (const piece of createReadStream(path, { highWaterMark: 1 << 20 })) {
    const chunk: Buffer = carry.length ? Buffer.concat([carry, piece as Buffer]) : (piece as Buffer);
    const out: Buffer[] = [];
    // A record starts outside quotes; an unfinished one is carried over and scanned again.
    let start = 0;
    let pos = 0;
    let inQuote = false;
    // The next quote's position, found once and kept: searching again for every record would
    // scan to the end of the chunk each time when the file has no quotes at all.
    let quote = chunk.indexOf(QUOTE);
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, pos);
      if (nl === -1) break;
      while (quote !== -1 && quote < nl) {
        inQuote = !inQuote;
        quote = chunk.indexOf(QUOTE, quote + 1);
      }
      pos = nl + 1;
      if (inQuote) continue;
      const end = nl > start && chunk[nl - 1] === CR ? nl - 1 : nl;
      if (header) header = false;
      else if (end > start) {
        out.push(chunk.subarray(start, end), suffix);
        records++;
      }
      start = pos;
    }
    carry = chunk.subarray(start);
    if (out.length) {
      yield Buffer.concat(out);
      await onRecords?.(records);
    }
  }
  const last = carry.length && carry[carry.length - 1] === CR ? carry.subarray(0, carry.length - 1) : carry;
  if (!header && last.length > 0) {
    records++;
    yield Buffer.concat([last, suffix]);
    await onRecords?.(records);
  }
}
