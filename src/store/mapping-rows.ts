import { diffKeys, type ExistingKey, type MappedItem } from "../core/policy/fan-out.ts";

/** Items per statement when a list is written: 100,000 items are 20 statements, one transaction. */
export const MAP_CHUNK = 5_000;

/** One instance to write: key, position in the list, item (JSON text), and state (queued, or held while maxActive are). */
export type MapRow = [key: string, position: number, item: string, state: "queued" | "scheduled"];

/** The reason a removed key's instance keeps. */
export const REMOVED_REASON = "removed: its key is no longer in the list";

/**
 * What an expansion writes, whichever store: core's diffKeys of the instances the run has and
 * the new list, as chunks of rows to insert (added keys), to reset (kept keys) and keys to record
 * as removed. The first `maxActive` items of the list (by position) are queued, the rest held;
 * a chained task's instances all wait for their parents.
 */
export function expansionWrites(existing: readonly ExistingKey[], items: readonly MappedItem[], maxActive: number | null, chained = false) {
  const diff = diffKeys(existing, items.map((i) => i.key));
  const added = new Set(diff.added);
  const insert: MapRow[] = [];
  const reset: MapRow[] = [];
  items.forEach((item, position) => {
    // A chained instance waits for its parent's instance of the same key.
    const row: MapRow = [item.key, position, item.item, !chained && (maxActive === null || position < maxActive) ? "queued" : "scheduled"];
    (added.has(item.key) ? insert : reset).push(row);
  });
  return { insert: chunks(insert), reset: chunks(reset), removed: chunks(diff.removed) };
}

function chunks<T>(all: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < all.length; i += MAP_CHUNK) out.push(all.slice(i, i + MAP_CHUNK));
  return out;
}
