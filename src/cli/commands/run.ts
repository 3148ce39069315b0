import type { Command } from "commander";
import { UsageError } from "../../core/model/errors.ts";
import type { Engine } from "../../engine/engine.ts";
import { elapsed, printJson } from "../format.ts";
import { openEngine, type GlobalOptions } from "../project.ts";

interface RunOptions {
  date?: string;
  start?: string;
  end?: string;
  param: string[];
  reason?: string;
  concurrency?: string;
  json?: boolean;
}

export function registerRunCommand(program: Command): void {
  program
    .command("run <pipeline>")
    .description("run a pipeline for one interval now, in this process (again, if it ran before)")
    .option("--date <YYYY-MM-DD>", "the business date")
    .option("--start <instant>", "interval start, for schedules that are not daily")
    .option("--end <instant>", "interval end, with --start")
    .option("-p, --param <key=value>", "override a pipeline param for this run (repeatable)", collect, [])
    .option("--reason <text>", "why, for the audit log")
    .option("--concurrency <n>", "task instances of this run that may run at once")
    .option("--json", "print the finished run as JSON")
    .action(async (pipelineId: string, options: RunOptions) => {
      const global = program.opts<GlobalOptions>();
      const engine = await openEngine(global);
      try {
        const interval = intervalOf(engine, pipelineId, options);
        const concurrency = options.concurrency === undefined ? engine.config.concurrency : positiveInt(options.concurrency);
        const result = await engine.runInterval(pipelineId, interval, {
          actor: global.user,
          reason: options.reason,
          params: parseParams(options.param),
          concurrency,
          onAttempt: options.json
            ? undefined
            : (claim, outcome) =>
                console.log(
                  `  ${claim.taskId.padEnd(24)} try ${claim.tryNumber}  ${outcome.taskState}` +
                    (outcome.errorMessage ? `  ${outcome.errorMessage}` : ""),
                ),
        });
        if (options.json) printJson(result);
        else {
          const { run } = result;
          console.log(
            `run ${run.runId} ${run.state}${result.created ? "" : " (rerun)"} in ${elapsed(run.startedAt, run.endedAt) ?? "0ms"}`,
          );
        }
        if (result.run.state !== "success") process.exitCode = 1;
      } finally {
        await engine.close();
        await engine.store.close();
      }
    });
}

function intervalOf(engine: Engine, pipelineId: string, options: RunOptions) {
  if (options.date && (options.start || options.end)) throw new UsageError("give --date, or --start and --end, not both");
  if (options.date) return engine.intervalForDate(pipelineId, options.date);
  if (options.start && options.end) return engine.intervalBetween(pipelineId, options.start, options.end);
  throw new UsageError("give the interval: --date YYYY-MM-DD, or --start and --end");
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** `key=value`; a value that parses as JSON (number, true, ...) is taken as such. */
export function parseParams(pairs: readonly string[]): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new UsageError(`--param ${JSON.stringify(pair)}: expected key=value`);
    const raw = pair.slice(eq + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      // a plain string
    }
    params[pair.slice(0, eq)] = value;
  }
  return params;
}

function positiveInt(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--concurrency ${text}: expected a whole number >= 1`);
  return n;
}
