import type { ClaimedAttempt } from "../../../store/port.ts";
import type { AttemptLog } from "../attempt-log.ts";
import type { AttemptResult } from "../attempt-result.ts";
import type { AttemptEnvironment } from "../attempt-environment.ts";
import type { ExternalCall } from "../external-call.ts";

/** What the runner of one kind of task is handed for one attempt. */
export interface KindAttempt {
  claim: ClaimedAttempt;
  log: AttemptLog;
  env: AttemptEnvironment;
  /** The attempt's W3C trace context, handed to its task code while traces are exported; else null. */
  traceparent: string | null;
  /**
   * Calls the task's code where task code runs (a task host, or this process) and says how it
   * ended. `upstream`: whether `ctx.upstream` holds the summaries of the tasks it runs after
   * (read from the store once per attempt), or is empty. `external`: an external task's step.
   * `timeoutMs`: the call's own limit, instead of the task's timeout.
   */
  code(options: { upstream: boolean; external?: ExternalCall; timeoutMs?: number | null }): Promise<AttemptResult>;
}
