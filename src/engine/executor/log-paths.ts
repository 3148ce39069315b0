import { join } from "node:path";

/** `<stateDir>/logs/<pipeline>/<run>/<task>/try-<n>.log`; run ids are made path-safe. */
export function attemptLogPath(stateDir: string, pipelineId: string, runId: string, taskId: string, tryNumber: number): string {
  return join(stateDir, "logs", pipelineId, runId.replace(/[^A-Za-z0-9_.@-]/g, "_"), taskId, `try-${tryNumber}.log`);
}
