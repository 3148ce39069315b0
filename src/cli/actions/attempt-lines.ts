/** What a line tells of an attempt whose result was recorded (the engine's `attempt:finished`). */
export interface AttemptLine {
  runId: string;
  taskId: string;
  tryNumber: number;
  taskState: string | null;
  errorMessage: string | null;
}

/** Successes listed one by one in a second; beyond, they are counted into one line for that second. */
export const SUCCESS_LINES_PER_SECOND = 10;

/** Lines wait at most this long, so a busy worker writes a few times a second, not once per attempt. */
const FLUSH_MS = 100;

/**
 * What `idem worker` prints about the attempts it ran, as a human can read it when attempts take
 * a millisecond: every attempt that did not succeed gets its line (run, task, try, state, why),
 * and so do the first `SUCCESS_LINES_PER_SECOND` successes of each second; the others of that
 * second are counted into one line (`... and 1234 more attempt(s) succeeded in this second`).
 * Lines are gathered and written together, at most `FLUSH_MS` after they happen.
 */
export class AttemptLines {
  readonly #write: (text: string) => void;
  readonly #now: () => number;
  #buffer = "";
  #flushTimer: NodeJS.Timeout | null = null;
  #secondStart = 0;
  #listed = 0;
  #unlisted = 0;
  #secondTimer: NodeJS.Timeout | null = null;

  constructor(write: (text: string) => void, now: () => number = Date.now) {
    this.#write = write;
    this.#now = now;
  }

  attempt(attempt: AttemptLine): void {
    const now = this.#now();
    if (now - this.#secondStart >= 1_000) this.#endSecond(now);
    if (attempt.taskState === "success" && !attempt.errorMessage) {
      if (this.#listed >= SUCCESS_LINES_PER_SECOND) {
        this.#unlisted++;
        this.#secondTimer ??= setTimeout(() => this.#endSecond(this.#now()), this.#secondStart + 1_000 - now).unref();
        return;
      }
      this.#listed++;
    }
    this.#add(now, `${attempt.runId} ${attempt.taskId} try ${attempt.tryNumber}: ${attempt.taskState}${attempt.errorMessage ? ` (${attempt.errorMessage})` : ""}`);
  }

  /** Writes what is waiting now (the worker stops). */
  close(): void {
    this.#endSecond(this.#now());
    this.#flush();
  }

  #endSecond(now: number): void {
    if (this.#secondTimer) clearTimeout(this.#secondTimer);
    this.#secondTimer = null;
    if (this.#unlisted > 0) this.#add(now, `... and ${this.#unlisted} more attempt(s) succeeded in this second`);
    this.#secondStart = now;
    this.#listed = 0;
    this.#unlisted = 0;
  }

  #add(now: number, line: string): void {
    this.#buffer += `${new Date(now).toISOString()} ${line}\n`;
    this.#flushTimer ??= setTimeout(() => this.#flush(), FLUSH_MS).unref();
  }

  #flush(): void {
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    if (!this.#buffer) return;
    const text = this.#buffer;
    this.#buffer = "";
    this.#write(text);
  }
}
