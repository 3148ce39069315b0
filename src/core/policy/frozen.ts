import { DefinitionError } from "../model/errors.ts";
import { parseBusinessDate } from "../time/dates.ts";

/** A closed range of business dates nobody may rewrite without saying why (e.g. a closed month). */
export interface FrozenPeriod {
  from: string;
  to: string;
  reason: string;
}

export function validateFrozenPeriods(periods: readonly FrozenPeriod[] | undefined): FrozenPeriod[] {
  if (periods === undefined) return [];
  if (!Array.isArray(periods)) throw new DefinitionError("frozen must be a list of { from, to, reason }");
  return periods.map((p, i) => {
    const from = parseBusinessDate(p?.from);
    const to = parseBusinessDate(p?.to);
    if (to < from) throw new DefinitionError(`frozen[${i}]: to ${to} is before from ${from}`);
    if (typeof p.reason !== "string" || p.reason.trim() === "") throw new DefinitionError(`frozen[${i}]: a frozen period needs a reason`);
    return { from, to, reason: p.reason };
  });
}

/** The frozen period that covers the business date, if any. */
export function frozenPeriodOf(periods: readonly FrozenPeriod[], businessDate: string): FrozenPeriod | null {
  return periods.find((p) => p.from <= businessDate && businessDate <= p.to) ?? null;
}

export function describeFrozen(p: FrozenPeriod): string {
  return `frozen ${p.from}..${p.to}: ${p.reason}`;
}
