import { accessSync, constants, mkdirSync, readFileSync, rmSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { formatDuration } from "../../core/time/duration.ts";
import type { AttemptResult } from "./attempt-result.ts";
import type { AttemptLog } from "./attempt-log.ts";
import { realSleep } from "./real-sleep.ts";
import { signalGroup, spawnSupervised } from "./supervised-spawn.ts";
import { stopReason } from "./stop-reason.ts";
import { ErrorClass } from "../../core/model/error-classes.ts";

export interface CommandRunOptions {
  argv: readonly string[];
  cwd: string;
  env: Record<string, string>;
  /** stdout and stderr both go here, masked and capped. */
  log: AttemptLog;
  /** A scratch folder for the summary file. */
  scratchDir: string;
  timeoutMs: number | null;
  killGraceMs: number;
  dataErrorExitCodes: readonly number[];
  /** Aborts the attempt (worker shutting down, lease lost); its reason says which. */
  cancel?: AbortSignal;
}

/**
 * Runs a command in its own process group under the supervising shell (see supervised-spawn),
 * so a timeout kills everything it started (SIGTERM to the group, then SIGKILL after the grace
 * period) and so does the death of this process.
 */
export async function runCommandTask(options: CommandRunOptions): Promise<AttemptResult> {
  mkdirSync(options.scratchDir, { recursive: true });
  const summaryFile = join(options.scratchDir, "summary.json");
  rmSync(summaryFile, { force: true });
  const [program, ...args] = options.argv as [string, ...string[]];
  if (!findProgram(program, options.cwd, options.env.PATH)) {
    return { outcome: "failed", errorClass: ErrorClass.SpawnError, errorMessage: `command not found: ${program}`, retryable: false, exitCode: null };
  }

  return new Promise<AttemptResult>((resolvePromise) => {
    let stopping: { errorClass: ErrorClass; message: string } | null = null;
    const stopTimers = new AbortController();
    const child = spawnSupervised([program, ...args], {
      cwd: options.cwd,
      env: { ...options.env, IDEM_SUMMARY_FILE: summaryFile },
      stdout: "pipe",
      stderr: "pipe",
    });
    child.stdout!.on("data", (chunk: Buffer) => options.log.write(chunk));
    child.stderr!.on("data", (chunk: Buffer) => options.log.write(chunk));

    const stop = (why: { errorClass: ErrorClass; message: string }) => {
      if (stopping || child.exitCode !== null || child.signalCode !== null) return;
      stopping = why;
      // A lost lease leaves no time for grace: the retry may start any moment.
      if (why.errorClass === ErrorClass.LeaseLost) return void signalGroup(child.pid, "SIGKILL");
      signalGroup(child.pid, "SIGTERM");
      void realSleep(options.killGraceMs, stopTimers.signal).then(() => {
        if (!stopTimers.signal.aborted) signalGroup(child.pid, "SIGKILL");
      });
    };
    if (options.timeoutMs !== null) {
      void realSleep(options.timeoutMs, stopTimers.signal).then(() => {
        if (!stopTimers.signal.aborted) stop({ errorClass: ErrorClass.Timeout, message: `timed out after ${formatDuration(options.timeoutMs!)}` });
      });
    }
    const onCancel = () => stop(stopReason(options.cancel!));
    options.cancel?.addEventListener("abort", onCancel, { once: true });
    if (options.cancel?.aborted) onCancel();

    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    const finish = (result: AttemptResult) => {
      stopTimers.abort();
      options.cancel?.removeEventListener("abort", onCancel);
      child.stdin?.end();
      resolvePromise(result);
    };

    child.on("error", (error: NodeJS.ErrnoException) => {
      finish({ outcome: "failed", errorClass: ErrorClass.SpawnError, errorMessage: `could not start ${program}: ${error.message}`, retryable: false, exitCode: null });
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      // Whatever the command left running in its group goes with it.
      signalGroup(child.pid, "SIGKILL");
    });
    // "close" comes after "exit" once stdout and stderr are drained: the log is then complete.
    child.on("close", () => {
      const { code, signal } = exit ?? { code: child.exitCode, signal: child.signalCode };
      if (stopping) {
        return finish({ outcome: "failed", errorClass: stopping.errorClass, errorMessage: stopping.message, retryable: true, exitCode: code });
      }
      if (signal) {
        return finish({ outcome: "failed", errorClass: ErrorClass.Signal, errorMessage: `killed by ${signal}`, retryable: true, exitCode: null });
      }
      if (code !== 0) {
        const dataError = options.dataErrorExitCodes.includes(code!);
        return finish({
          outcome: "failed",
          errorClass: dataError ? ErrorClass.DataError : ErrorClass.ExitCode,
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
            errorClass: ErrorClass.SummaryError,
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

/** The program as execvp would find it: a path (relative to cwd), or a name on PATH. */
function findProgram(program: string, cwd: string, path: string | undefined): boolean {
  const executable = (file: string) => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (program.includes("/")) return executable(isAbsolute(program) ? program : resolve(cwd, program));
  return (path ?? "/usr/local/bin:/usr/bin:/bin").split(delimiter).some((dir) => dir && executable(join(resolve(cwd, dir), program)));
}
