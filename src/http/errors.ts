import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ArgumentError, ConflictError, DefinitionError, NotFoundError, UsageError } from "../core/model/errors.ts";
import { FieldError, problem } from "./problem.ts";

/** The path parameter (or body field) that named the missing thing. */
const FIELD_OF: Record<NotFoundError["what"], string> = {
  pipeline: "pipelineId",
  run: "runId",
  task: "taskId",
  attempt: "try",
  backfill: "backfillId",
  pool: "name",
  token: "name",
  incident: "key",
  dataset: "name",
  codeVersion: "version",
};

/** Status and problem document for an error the engine raised; anything unexpected is a 500 and logged. */
export function problemFor(c: Context, error: unknown, unexpected: (failure: string) => void): Response {
  if (error instanceof FieldError) return problem(c, error.status, error.message, { field: error.field });
  if (error instanceof NotFoundError) return problem(c, 404, error.message, { field: FIELD_OF[error.what] });
  if (error instanceof ConflictError) return problem(c, 409, error.message);
  // The API's fields carry the engine's names for its arguments.
  if (error instanceof ArgumentError) return problem(c, 422, error.message, { field: error.argument });
  if (error instanceof UsageError || error instanceof DefinitionError) return problem(c, 422, error.message);
  if (error instanceof HTTPException) return problem(c, error.status as ContentfulStatusCode, error.message);
  unexpected(error instanceof Error ? (error.stack ?? error.message) : String(error));
  return problem(c, 500, "internal error (see the server's log)");
}
