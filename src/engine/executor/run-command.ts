import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { formatDuration } from "../../core/time/duration.ts";
import type { AttemptResult } from "./attempt-result.ts";
import { realSleep } from "./real-sleep.ts";

export interface CommandRunOptions {
  argv: readonly string[];
  cwd: string;
  env: Record<string, string>;
  /** stdout and stderr both go here. */
  logFd: number;
  /** A scratch folder for the summary file. */
  scratchDir: string;
  timeoutMs: number | null;
  killGraceMs: number;
  dataErrorExitCodes: readonly number[];
  cancel?: AbortSignal;
}

/**
 * Runs a command in its own process group, so a timeout kills everything it started:
 * SIGTERM to the group, then SIGKILL after the grace period.
 */
export async function runCommandTask(options: CommandRunOptions): Promise<AttemptResult> {
  mkdirSync(options.scratchDir, { recursive: true });
  const summaryFile = join(options.scratchDir, "summary.json");
  rmSync(summaryFile, { force: true });
  const [program, ...args] = options.argv as [string, ...string[]];

  return new Promise<AttemptResult>((resolve) => {
    let stopping: "Timeout" | "Cancelled" | null = null;
    const stopTimers = new AbortController();
    const child = spawn(program, args, {
      cwd: options.cwd,
      env: { ...options.env, IDEM_SUMMARY_FILE: summaryFile },
      stdio: ["ignore", options.logFd, options.logFd],
      detached: true,
    });

    const killGroup = (signal: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(-child.pid, signal);
      } catch {
        // the group is already gone
      }
    };
    const stop = (why: "Timeout" | "Cancelled") => {
      if (stopping || child.exitCode !== null) return;
      stopping = why;
      killGroup("SIGTERM");
      void realSleep(options.killGraceMs, stopTimers.signal).then(() => {
        if (!stopTimers.signal.aborted) killGroup("SIGKILL");
      });
    };
    if (options.timeoutMs !== null) {
      void realSleep(options.timeoutMs, stopTimers.signal).then(() => {
        if (!stopTimers.signal.aborted) stop("Timeout");
      });
    }
    const onCancel = () => stop("Cancelled");
    options.cancel?.addEventListener("abort", onCancel, { once: true });

    const finish = (result: AttemptResult) => {
      stopTimers.abort();
      options.cancel?.removeEventListener("abort", onCancel);
      resolve(result);
    };

    child.on("error", (error: NodeJS.ErrnoException) => {
      const message = error.code === "ENOENT" ? `command not found: ${program}` : `could not start ${program}: ${error.message}`;
      finish({ outcome: "failed", errorClass: "SpawnError", errorMessage: message, retryable: false, exitCode: null });
    });
    child.on("exit", (code, signal) => {
      // Whatever the command left running in its group goes with it.
      killGroup("SIGKILL");
      if (stopping === "Timeout") {
        return finish({
          outcome: "failed",
          errorClass: "Timeout",
          errorMessage: `timed out after ${formatDuration(options.timeoutMs!)}`,
          retryable: true,
          exitCode: code,
        });
      }
      if (stopping === "Cancelled") {
        return finish({ outcome: "failed", errorClass: "Cancelled", errorMessage: "cancelled: worker is shutting down", retryable: true, exitCode: code });
      }
      if (signal) {
        return finish({ outcome: "failed", errorClass: "Signal", errorMessage: `killed by ${signal}`, retryable: true, exitCode: null });
      }
      if (code !== 0) {
        const dataError = options.dataErrorExitCodes.includes(code!);
        return finish({
          outcome: "failed",
          errorClass: dataError ? "DataError" : "ExitCode",
          errorMessage: dataError ? `exited with ${code}: a data error, not retried` : `exited with ${code}`,
          retryable: !dataError,
          exitCode: code,
        });
      }
      let summary: Record<string, unknown> | null = null;
      try {
        summary = JSON.parse(readFileSync(summaryFile, "utf8"));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
          return finish({
            outcome: "failed",
            errorClass: "SummaryError",
            errorMessage: `IDEM_SUMMARY_FILE is not valid JSON: ${(error as Error).message}`,
            retryable: false,
            exitCode: 0,
          });
        }
      }
      finish({ outcome: "success", summary, exitCode: 0 });
    });
  });
}
