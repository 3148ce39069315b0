import { join } from "node:path";

/**
 * Where an attempt's log lives: `<logDir>/<run>/<task>/try-<n>.log`, the run id (which names the
 * pipeline) made path-safe. The store records it on the attempt when the claim starts it; the
 * worker that claims says which folder (`<stateDir>/logs`).
 */
export function attemptLogPath(logDir: string, runId: string, taskId: string, tryNumber: number): string {
  return join(logDir, runId.replace(/[^A-Za-z0-9_.@-]/g, "_"), taskId, `try-${tryNumber}.log`);
}
