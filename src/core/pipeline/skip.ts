/** Thrown by `ctx.skip(reason)`; the executor turns it into a skipped attempt, not a failure. */
export class TaskSkipped extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`skipped: ${reason}`);
    this.name = "TaskSkipped";
    this.reason = reason;
  }
}
