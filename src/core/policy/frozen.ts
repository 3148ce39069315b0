import { DefinitionError } from "../model/errors.ts";
import { suggestion } from "../model/nearest-name.ts";
import { parseBusinessDate } from "../time/dates.ts";

/**
 * A closed range of business dates nobody may rewrite without saying why (e.g. a closed month).
 * The owner is who answers for it: an auditor asks them, and only they should open it.
 */
export interface FrozenPeriod {
  from: string;
  to: string;
  owner: string;
  reason: string;
}

const KEYS = ["from", "to", "owner", "reason"];

export function validateFrozenPeriods(periods: readonly FrozenPeriod[] | undefined): FrozenPeriod[] {
  if (periods === undefined) return [];
  if (!Array.isArray(periods)) throw new DefinitionError("frozen must be a list of { from, to, owner, reason }");
  return periods.map((p, i) => {
    const at = `frozen[${i}]`;
    if (!p || typeof p !== "object" || Array.isArray(p)) throw new DefinitionError(`${at}: expected { from, to, owner, reason }`);
    const unknown = Object.keys(p).find((k) => !KEYS.includes(k));
    if (unknown !== undefined) throw new DefinitionError(`${at}: unknown key ${JSON.stringify(unknown)}${suggestion(unknown, KEYS)}`);
    const date = (field: "from" | "to") => {
      try {
        return parseBusinessDate(p[field]);
      } catch (error) {
        throw new DefinitionError(`${at}.${field}: ${(error as Error).message}`);
      }
    };
    const from = date("from");
    const to = date("to");
    if (to < from) throw new DefinitionError(`${at}: to ${to} is before from ${from}`);
    const text = (field: "owner" | "reason", what: string) => {
      const value = p[field];
      if (typeof value !== "string" || value.trim() === "") throw new DefinitionError(`${at}.${field}: a frozen period needs ${what}`);
      return value.trim();
    };
    return { from, to, owner: text("owner", "an owner (who answers for it, e.g. \"finance\")"), reason: text("reason", "a reason") };
  });
}

/** The frozen period that covers the business date, if any. */
export function frozenPeriodOf(periods: readonly FrozenPeriod[], businessDate: string): FrozenPeriod | null {
  return periods.find((p) => p.from <= businessDate && businessDate <= p.to) ?? null;
}

export function describeFrozen(p: FrozenPeriod): string {
  return `frozen ${p.from}..${p.to} by ${p.owner}: ${p.reason}`;
}

/** What changed between two lists of frozen periods; a period is known by its from..to. */
export interface FrozenChange {
  added: FrozenPeriod[];
  removed: FrozenPeriod[];
  changed: { from: string; to: string; before: { owner: string; reason: string }; after: { owner: string; reason: string } }[];
}

export function diffFrozenPeriods(before: readonly FrozenPeriod[], after: readonly FrozenPeriod[]): FrozenChange {
  const key = (p: FrozenPeriod) => `${p.from}..${p.to}`;
  const old = new Map(before.map((p) => [key(p), p]));
  const now = new Map(after.map((p) => [key(p), p]));
  const change: FrozenChange = { added: [], removed: [], changed: [] };
  for (const [k, p] of now) {
    const was = old.get(k);
    if (!was) change.added.push(p);
    else if (was.owner !== p.owner || was.reason !== p.reason) {
      change.changed.push({ from: p.from, to: p.to, before: { owner: was.owner, reason: was.reason }, after: { owner: p.owner, reason: p.reason } });
    }
  }
  for (const [k, p] of old) if (!now.has(k)) change.removed.push(p);
  const byDates = (a: { from: string; to: string }, b: { from: string; to: string }) => (a.from === b.from ? (a.to < b.to ? -1 : 1) : a.from < b.from ? -1 : 1);
  change.added.sort(byDates);
  change.removed.sort(byDates);
  change.changed.sort(byDates);
  return change;
}

export function isNoFrozenChange(change: FrozenChange): boolean {
  return change.added.length + change.removed.length + change.changed.length === 0;
}

/** One line an auditor reads: "added ...; removed ...; 2026-09-01..2026-09-30: owner a -> b". */
export function describeFrozenChange(change: FrozenChange): string {
  const parts = [
    ...change.added.map((p) => `added ${describeFrozen(p)}`),
    ...change.removed.map((p) => `removed ${describeFrozen(p)}`),
    ...change.changed.map((c) => {
      const what: string[] = [];
      if (c.before.owner !== c.after.owner) what.push(`owner ${c.before.owner} -> ${c.after.owner}`);
      if (c.before.reason !== c.after.reason) what.push(`reason ${JSON.stringify(c.before.reason)} -> ${JSON.stringify(c.after.reason)}`);
      return `changed frozen ${c.from}..${c.to}: ${what.join(", ")}`;
    }),
  ];
  return parts.length ? parts.join("; ") : "no change";
}

/** The periods in one canonical order and shape, so that equal lists are equal texts. */
export function canonicalFrozenPeriods(periods: readonly FrozenPeriod[]): FrozenPeriod[] {
  return [...periods]
    .map((p) => ({ from: p.from, to: p.to, owner: p.owner, reason: p.reason }))
    .sort((a, b) => (a.from === b.from ? (a.to === b.to ? (a.owner + a.reason < b.owner + b.reason ? -1 : 1) : a.to < b.to ? -1 : 1) : a.from < b.from ? -1 : 1));
}
