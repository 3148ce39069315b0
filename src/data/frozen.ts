import { DataError, DefinitionError } from "../core/model/errors.ts";

/** A closed range of business dates that no loader may rewrite; `to` is included. */
export interface FrozenPeriod {
  from: string;
  to: string;
  /** Who answers for the period (the engine's periods always name one). */
  owner?: string;
  reason: string;
}

/** Refused writes are never retried: waiting does not unfreeze a period. */
export class FrozenPeriodError extends DataError {}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Throws when any of the date ranges touches a frozen period, unless the call opened the frozen
 * dates with a reason; returns that reason (to be recorded in history) or null.
 */
export function guardFrozen(
  what: string,
  ranges: readonly { from: string; to: string }[],
  frozen: readonly FrozenPeriod[] | undefined,
  openFrozen: { reason: string } | undefined,
): string | null {
  if (!frozen || frozen.length === 0) return null;
  for (const period of frozen) {
    if (!DATE.test(period.from) || !DATE.test(period.to) || period.from > period.to) {
      throw new DefinitionError(`frozen period ${period.from}..${period.to}: expected from <= to as YYYY-MM-DD`);
    }
  }
  if (openFrozen !== undefined && !openFrozen.reason?.trim()) {
    throw new DefinitionError(`${what}: opening frozen dates needs a reason`);
  }
  for (const range of ranges) {
    const hit = frozen.find((p) => range.from <= p.to && range.to >= p.from);
    if (!hit) continue;
    if (openFrozen) return openFrozen.reason.trim();
    const touched = range.from === range.to ? range.from : `${range.from}..${range.to}`;
    throw new FrozenPeriodError(
      `${what}: ${touched} is in the frozen period ${hit.from}..${hit.to} (${hit.owner ? `${hit.owner}: ` : ""}${hit.reason}); pass openFrozen: { reason } to write it anyway`,
    );
  }
  return null;
}
