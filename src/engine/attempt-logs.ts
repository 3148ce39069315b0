import { existsSync, readFileSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { NotFoundError } from "../core/model/errors.ts";
import type { AttemptRecord } from "../store/port.ts";
import type { EngineContext } from "./engine-context.ts";
import type { RunReads } from "./run-reads.ts";

export interface LogRange {
  attempt: AttemptRecord;
  /** The log file's size in bytes at the time of reading. */
  size: number;
  offset: number;
  bytes: Buffer;
  /** The attempt has ended: the log will not grow. */
  ended: boolean;
}

/** Each attempt's log: which file, its text, a byte range of it while it grows. */
export class AttemptLogs {
  readonly #e: Pick<EngineContext, "store">;
  readonly #runs: RunReads;

  constructor(context: Pick<EngineContext, "store">, runs: RunReads) {
    this.#e = context;
    this.#runs = runs;
  }

  /** The log of one attempt (the given try, or the latest) as text: for small logs and tests. */
  async text(runId: string, taskId: string, tryNumber?: number): Promise<{ attempt: AttemptRecord; text: string }> {
    const { attempt } = await this.of(runId, taskId, tryNumber);
    return { attempt, text: existsSync(attempt.logPath) ? readFileSync(attempt.logPath, "utf8") : "" };
  }

  /** Which attempt's log to show (the given try, or the latest), and where it is. */
  async of(runId: string, taskId: string, tryNumber?: number): Promise<{ attempt: AttemptRecord; path: string }> {
    const attempts = await this.#runs.attempts(runId, taskId);
    if (attempts.length === 0) {
      const tasks = await this.#e.store.listTaskInstances(runId);
      if (!tasks.some((t) => t.taskId === taskId)) throw new NotFoundError("task", `run ${runId} has no task "${taskId}"`);
      throw new NotFoundError("attempt", `task ${taskId} of run ${runId} has not run yet`);
    }
    const attempt = tryNumber === undefined ? attempts.at(-1)! : attempts.find((a) => a.tryNumber === tryNumber);
    if (!attempt) {
      throw new NotFoundError("attempt", `task ${taskId} of run ${runId} has no try ${tryNumber} (tries: ${attempts.map((a) => a.tryNumber).join(", ")})`);
    }
    return { attempt, path: attempt.logPath };
  }

  /** Whether an attempt is still running: a follower of its log reads on while it is. */
  async running(runId: string, taskId: string, attemptId: number): Promise<boolean> {
    const attempts = await this.#e.store.listAttempts(runId, taskId);
    return attempts.find((a) => a.attemptId === attemptId)?.state === "running";
  }

  /**
   * Bytes [offset, offset + length) of one attempt's log, with the file's size now and whether
   * the attempt has ended (so a reader knows the log can still grow).
   */
  async range(runId: string, taskId: string, tryNumber: number, range: { offset: number; length: number }): Promise<LogRange> {
    const attempts = await this.#runs.attempts(runId, taskId);
    const attempt = attempts.find((a) => a.tryNumber === tryNumber);
    if (!attempt) {
      if (attempts.length === 0 && !(await this.#e.store.listTaskInstances(runId)).some((t) => t.taskId === taskId)) {
        throw new NotFoundError("task", `run ${runId} has no task "${taskId}"`);
      }
      throw new NotFoundError("attempt", `task ${taskId} of run ${runId} has no try ${tryNumber}${attempts.length ? ` (tries: ${attempts.map((a) => a.tryNumber).join(", ")})` : " (it has not run yet)"}`);
    }
    const ended = attempt.state !== "running";
    let file: FileHandle;
    try {
      file = await open(attempt.logPath, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { attempt, size: 0, offset: range.offset, bytes: Buffer.alloc(0), ended };
      throw error;
    }
    try {
      const size = (await file.stat()).size;
      const length = Math.max(0, Math.min(range.length, size - range.offset));
      const bytes = Buffer.alloc(length);
      if (length > 0) await file.read(bytes, 0, length, range.offset);
      return { attempt, size, offset: range.offset, bytes, ended };
    } finally {
      await file.close();
    }
  }
}
