import { join } from "node:path";
import type { CommandTask } from "../../../core/pipeline/types.ts";
import type { AttemptResult } from "../attempt-result.ts";
import { commandEnvironment } from "../command-env.ts";
import { runCommandTask } from "../run-command.ts";
import type { KindAttempt } from "./kind-attempt.ts";

/**
 * A command's attempt runs its argv in a process of its own, under the worker (run-command.ts).
 * An argv built by a function is built first, where task code runs; it gets no `ctx.upstream`.
 */
export async function commandAttempt(task: CommandTask, attempt: KindAttempt): Promise<AttemptResult> {
  const { claim, env, log } = attempt;
  let argv: readonly string[];
  if (typeof task.command === "function") {
    const built = await attempt.code({ upstream: false });
    if (built.outcome !== "success") return built;
    argv = built.summary!.argv as string[];
  } else {
    argv = task.command;
    env.onStarted?.();
  }
  return runCommandTask({
    argv,
    cwd: task.cwd ?? env.defaultCwd,
    env: {
      ...commandEnvironment(task, process.env, env.withheldEnv),
      IDEM_RUN_ID: claim.runId,
      IDEM_PIPELINE: claim.pipelineId,
      IDEM_TASK: claim.taskId,
      IDEM_BUSINESS_DATE: claim.businessDate,
      IDEM_INTERVAL_START: new Date(claim.intervalStart).toISOString(),
      IDEM_INTERVAL_END: new Date(claim.intervalEnd).toISOString(),
      IDEM_TRY: String(claim.tryNumber),
      ...(attempt.traceparent === null ? {} : { TRACEPARENT: attempt.traceparent }),
    },
    log,
    scratchDir: join(env.scratchDir, String(claim.attemptId)),
    timeoutMs: task.policy.timeoutMs,
    killGraceMs: task.killGraceMs,
    dataErrorExitCodes: task.dataErrorExitCodes,
    cancel: env.cancel,
  });
}
