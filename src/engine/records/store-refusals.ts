import { ConflictError, NotFoundError, type ErrorPlace } from "../../core/model/errors.ts";
import { StoreConflictError } from "../../store/port.ts";

/**
 * What the engine makes of a store's refusal (`StoreConflictError`), decided here and nowhere
 * else in the engine (test/module-boundaries.test.ts checks that no other engine file names it).
 *
 * Runs a store write whose refusal the engine's callers must see in the engine's own errors: a
 * thing the write names that does not exist is a `NotFoundError` (404, exit 2), any other refusal
 * a `ConflictError` (409, exit 2). Every engine action that writes through a refusing store
 * method goes through here, so the translation is written once.
 */
export async function refusalsTranslated<T>(write: () => Promise<T>, place: ErrorPlace = {}): Promise<T> {
  try {
    return await write();
  } catch (error) {
    throw engineErrorOf(error, place);
  }
}

/** The engine's error for a store refusal; any other error as it is. */
export function engineErrorOf(error: unknown, place: ErrorPlace = {}): unknown {
  if (!(error instanceof StoreConflictError)) return error;
  const missing = /^no (run|backfill|incident) /.exec(error.message);
  if (missing) return new NotFoundError(missing[1] as "run" | "backfill" | "incident", error.message.replace(/^no /, "unknown "), place);
  if (/ has no task /.test(error.message)) return new NotFoundError("task", error.message, place);
  return new ConflictError(error.message, place);
}

/**
 * Runs a store write that another process may have made first or made pointless (another
 * scheduler restated the run, the run became live): the refusal is that lost race, not an error.
 * Returns the store's reason when it refused, null when the write went through.
 */
export async function refusalOf(write: () => Promise<unknown>): Promise<string | null> {
  try {
    await write();
    return null;
  } catch (error) {
    if (!(error instanceof StoreConflictError)) throw error;
    return error.message;
  }
}
