import { join } from "node:path";

/** `<stateDir>/logs/<run>/<task>/try-<n>.log`; the run id names the pipeline and is made path-safe. */
export function attemptLogPath(stateDir: string, runId: string, taskId: string, tryNumber: number): string {
  return join(stateDir, "logs", runId.replace(/[^A-Za-z0-9_.@-]/g, "_"), taskId, `try-${tryNumber}.log`);
}
