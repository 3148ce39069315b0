import { UsageError } from "../../core/model/errors.ts";
import { elapsed, isoTime, printJson, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

export function attempts(cli: Cli, runId: string, taskId: string, flags: { json?: boolean }) {
  return withEngine(cli, { pipelines: false }, async (engine) => {
    const tries = await engine.attempts(runId, taskId);
    if (tries.length === 0) {
      const tasks = await engine.taskInstances(runId);
      if (!tasks.some((t) => t.taskId === taskId)) throw new UsageError(`run ${runId} has no task "${taskId}" (tasks: ${tasks.map((t) => t.taskId).join(", ")})`);
    }
    // The delay before a try: from the end of the one before it to its start (the retry delay, plus any wait for a worker or a slot).
    const rows = tries.map((a, i) => ({ ...a, delayBeforeMs: i === 0 || tries[i - 1]!.endedAt === null ? null : a.startedAt - tries[i - 1]!.endedAt! }));
    if (flags.json) return printJson(rows);
    if (rows.length === 0) return console.log(`task ${taskId} of run ${runId} has not run yet`);
    console.log(
      table(
        ["try", "state", "started", "ended", "took", "delay before", "worker", "error"],
        rows.map((a) => [
          a.tryNumber, a.state, isoTime(a.startedAt), isoTime(a.endedAt), elapsed(a.startedAt, a.endedAt),
          a.delayBeforeMs === null ? null : elapsed(0, a.delayBeforeMs), a.workerId,
          a.errorMessage ? `${a.errorClass}: ${a.errorMessage}` : a.exitCode !== null && a.exitCode !== 0 ? `exit ${a.exitCode}` : null,
        ]),
      ),
    );
  });
}
