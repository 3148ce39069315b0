import type { FunctionTask } from "../../../core/pipeline/types.ts";
import type { AttemptResult } from "../attempt-result.ts";
import type { KindAttempt } from "./kind-attempt.ts";

/** A function task's attempt is one call of its function, where task code runs. */
export function functionAttempt(_task: FunctionTask, attempt: KindAttempt): Promise<AttemptResult> {
  return attempt.code({ upstream: true });
}
