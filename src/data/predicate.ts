import { DefinitionError } from "../core/model/errors.ts";
import { ident, joinSql, sql, trusted, type Sql, type SqlValue } from "./sql.ts";

/**
 * Which rows a write owns, given as data rather than SQL text, so it can be bound as parameters,
 * described in history, and checked against every staged row.
 * `from`/`to` is half-open, [from, to), like an interval.
 */
export type Predicate =
  | { column: string; equals: SqlValue }
  | { column: string; in: readonly SqlValue[] }
  | { column: string; from?: SqlValue; to?: SqlValue }
  | { all: readonly Predicate[] };

export function predicateSql(p: Predicate, alias?: string): Sql {
  if ("all" in p) {
    if (p.all.length === 0) return trusted("TRUE");
    return sql`(${joinSql(p.all.map((q) => predicateSql(q, alias)), " AND ")})`;
  }
  const col = alias === undefined ? sql`${ident(p.column)}` : sql`${ident(alias)}.${ident(p.column)}`;
  if ("equals" in p) {
    if (p.equals === null) return sql`${col} IS NULL`;
    return sql`${col} = ${p.equals}`;
  }
  if ("in" in p) {
    if (p.in.length === 0) return trusted("FALSE");
    return sql`${col} IN (${joinSql([...p.in])})`;
  }
  const parts: Sql[] = [];
  if (p.from !== undefined && p.from !== null) parts.push(sql`${col} >= ${p.from}`);
  if (p.to !== undefined && p.to !== null) parts.push(sql`${col} < ${p.to}`);
  if (parts.length === 0) throw new DefinitionError(`predicate on ${p.column} needs from, to or both`);
  return sql`(${joinSql(parts, " AND ")})`;
}

/** One line for messages and history: `order_date = 2026-09-01`. */
export function describePredicate(p: Predicate): string {
  if ("all" in p) return p.all.map(describePredicate).join(" and ");
  if ("equals" in p) return p.equals === null ? `${p.column} is null` : `${p.column} = ${String(p.equals)}`;
  if ("in" in p) return `${p.column} in (${p.in.map(String).join(", ")})`;
  if (p.from != null && p.to != null) return `${p.column} in [${String(p.from)}, ${String(p.to)})`;
  if (p.from != null) return `${p.column} >= ${String(p.from)}`;
  return `${p.column} < ${String(p.to)}`;
}

export function predicateColumns(p: Predicate): string[] {
  return "all" in p ? [...new Set(p.all.flatMap(predicateColumns))] : [p.column];
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}/;

/**
 * The business dates a predicate can reach, as closed ranges, when its values are dates;
 * an open end reaches every date on that side.
 */
export function predicateDateRanges(p: Predicate): { from: string; to: string }[] {
  const day = (v: SqlValue | undefined) => (typeof v === "string" && ISO_DATE.test(v) ? v.slice(0, 10) : null);
  if ("all" in p) return p.all.flatMap(predicateDateRanges);
  if ("equals" in p) {
    const d = day(p.equals);
    return d ? [{ from: d, to: d }] : [];
  }
  if ("in" in p) return p.in.map(day).filter((d): d is string => d !== null).map((d) => ({ from: d, to: d }));
  const from = day(p.from);
  const to = day(p.to);
  if (from === null && to === null) return [];
  // [from, to) in dates: the last date reached is the one before `to` (or `to` itself if it has a time).
  const last = to === null ? "9999-12-31" : typeof p.to === "string" && p.to.length > 10 ? to : previousDay(to);
  return [{ from: from ?? "0000-01-01", to: last }];
}

function previousDay(date: string): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - 1);
  return d.toISOString().slice(0, 10);
}

/** The predicate evaluated on a JavaScript row, for rows given as an array. */
export function rowMatches(row: Readonly<Record<string, unknown>>, p: Predicate): boolean {
  if ("all" in p) return p.all.every((q) => rowMatches(row, q));
  const value = normalize(row[p.column]);
  if ("equals" in p) return p.equals === null ? value === null : value !== null && compare(value, p.equals) === 0;
  if (value === null) return false;
  if ("in" in p) return p.in.some((v) => v !== null && compare(value, v) === 0);
  if (p.from != null && compare(value, p.from) < 0) return false;
  if (p.to != null && compare(value, p.to) >= 0) return false;
  return true;
}

function normalize(v: unknown): string | number | bigint | boolean | null {
  if (v === undefined || v === null) return null;
  if (v instanceof Date) return v.toISOString();
  if (typeof v === "string" || typeof v === "number" || typeof v === "bigint" || typeof v === "boolean") return v;
  return JSON.stringify(v);
}

function compare(a: string | number | bigint | boolean, b: string | number | bigint | boolean): number {
  if (typeof a === "string" || typeof b === "string") {
    const x = String(a);
    const y = String(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  const x = Number(a);
  const y = Number(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
