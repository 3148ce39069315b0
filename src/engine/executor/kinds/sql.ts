import type { SqlTask } from "../../../core/pipeline/types.ts";
import type { AttemptResult } from "../attempt-result.ts";
import type { KindAttempt } from "./kind-attempt.ts";

/**
 * A SQL task's attempt is one call of its statements (run-sql.ts), where task code runs: the
 * connection is opened there, and a timeout or a stop ends it like a function's.
 */
export function sqlAttempt(_task: SqlTask, attempt: KindAttempt): Promise<AttemptResult> {
  return attempt.code({ upstream: true });
}
