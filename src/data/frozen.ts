import { DataError, DefinitionError } from "../core/model/errors.ts";
import { validateFrozenPeriods, type FrozenPeriod } from "../core/policy/frozen.ts";

export type { FrozenPeriod };

/** Refused writes are never retried: waiting does not unfreeze a period. */
export class FrozenPeriodError extends DataError {}

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
  let periods: FrozenPeriod[];
  try {
    periods = validateFrozenPeriods(frozen);
  } catch (error) {
    throw new DefinitionError(`${what}: ${(error as Error).message}`);
  }
  if (openFrozen !== undefined && !openFrozen.reason?.trim()) {
    throw new DefinitionError(`${what}: opening frozen dates needs a reason`);
  }
  for (const range of ranges) {
    const hit = periods.find((p) => range.from <= p.to && range.to >= p.from);
    if (!hit) continue;
    if (openFrozen) return openFrozen.reason.trim();
    const touched = range.from === range.to ? range.from : `${range.from}..${range.to}`;
    throw new FrozenPeriodError(
      `${what}: ${touched} is in the frozen period ${hit.from}..${hit.to} (${hit.owner}: ${hit.reason}); pass openFrozen: { reason } to write it anyway`,
    );
  }
  return null;
}
