import { DefinitionError, type ErrorPlace } from "./errors.ts";

const ID_PATTERN = /^[A-Za-z_][A-Za-z0-9_-]{0,99}$/;

/** Pipeline and task ids appear in paths, URLs and SQL rows, so they are kept plain. */
export function isValidId(id: unknown): id is string {
  return typeof id === "string" && ID_PATTERN.test(id);
}

export function assertValidId(id: unknown, what: "pipeline" | "task", place: ErrorPlace = {}): string {
  if (!isValidId(id)) {
    throw new DefinitionError(
      `invalid ${what} id ${JSON.stringify(id)}: use letters, digits, _ and -, starting with a letter or _ (at most 100)`,
      place,
    );
  }
  return id;
}
