import type { Command } from "commander";
import { UsageError } from "../../core/model/errors.ts";
import { formatInstant } from "../../core/time/dates.ts";
import { elapsed, isoTime, printJson, restated, table } from "../format.ts";
import { engineAction } from "../project.ts";

/** Read-only commands: runs, tasks, logs, next. */
export function registerInspectCommands(program: Command): void {
  const withEngine = engineAction(program);

  program
    .command("runs <pipeline>")
    .description("list a pipeline's runs, newest interval first")
    .option("--limit <n>", "how many", "50")
    .option("--json", "print as JSON")
    .action((pipelineId: string, options: { limit: string; json?: boolean }) =>
      withEngine(async (engine) => {
        const runs = await engine.runs(pipelineId, positiveInt(options.limit, "--limit"));
        if (options.json) return printJson(runs);
        if (runs.length === 0) return console.log(`no runs of ${pipelineId} yet`);
        console.log(
          table(
            ["run", "date", "state", "trigger", "by", "started", "took", "restated"],
            runs.map((r) => [r.runId, r.businessDate, r.state, r.trigger, r.triggeredBy, isoTime(r.startedAt), elapsed(r.startedAt, r.endedAt), restated(r)]),
          ),
        );
      }),
    );

  program
    .command("tasks <run>")
    .description("the task instances of a run, with their state and last error")
    .option("--json", "print as JSON")
    .action((runId: string, options: { json?: boolean }) =>
      withEngine(async (engine) => {
        const tasks = await engine.taskInstances(runId);
        const attempts = await engine.attempts(runId);
        const last = new Map(attempts.map((a) => [a.taskId, a]));
        if (options.json) return printJson(tasks.map((t) => ({ ...t, lastAttempt: last.get(t.taskId) ?? null })));
        console.log(
          table(
            ["task", "state", "try", "started", "took", "note"],
            tasks.map((t) => {
              const a = last.get(t.taskId);
              return [
                t.taskId,
                t.state,
                `${t.tryNumber}/${t.maxTries}`,
                isoTime(t.startedAt),
                elapsed(t.startedAt, t.endedAt),
                t.reason ?? (a?.errorMessage ? `${a.errorClass}: ${a.errorMessage}` : a?.summary ? JSON.stringify(a.summary) : ""),
              ];
            }),
          ),
        );
      }),
    );

  program
    .command("logs <run> <task>")
    .description("print the log of a task's latest attempt (or --try N)")
    .option("--try <n>", "which try")
    .action((runId: string, taskId: string, options: { try?: string }) =>
      withEngine(async (engine) => {
        const { text } = await engine.log(runId, taskId, options.try === undefined ? undefined : positiveInt(options.try, "--try"));
        process.stdout.write(text);
      }),
    );

  program
    .command("next <pipeline>")
    .description("preview the next runs the schedule will create")
    .option("-n, --count <n>", "how many", "5")
    .option("--json", "print as JSON")
    .action((pipelineId: string, options: { count: string; json?: boolean }) =>
      withEngine(async (engine) => {
        const due = engine.preview(pipelineId, positiveInt(options.count, "--count"));
        const tz = engine.pipeline(pipelineId).schedule.timezone;
        if (options.json) {
          return printJson(due.map((d) => ({ ...d.interval, startIso: isoTime(d.interval.start), endIso: isoTime(d.interval.end), firesAt: isoTime(d.firesAt) })));
        }
        if (due.length === 0) return console.log(`${pipelineId} has no scheduled runs ahead (${engine.pipeline(pipelineId).schedule.describe()})`);
        console.log(
          table(
            ["date", "interval start", "interval end", "fires at"],
            due.map((d) => [d.interval.businessDate, formatInstant(d.interval.start, tz), formatInstant(d.interval.end, tz), formatInstant(d.firesAt, tz)]),
          ),
        );
        const restating = await engine.restateEstimate(pipelineId);
        if (restating) console.log(`\n${restating.summary}`);
      }),
    );
}

function positiveInt(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} ${text}: expected a whole number >= 1`);
  return n;
}
