import { UsageError } from "../../core/model/errors.ts";
import type { Engine } from "../../engine/engine.ts";
import { elapsed, printJson } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";
import { testClock } from "../test-clock.ts";

interface RunOptions {
  date?: string;
  start?: string;
  end?: string;
  param: string[];
  reason?: string;
  code?: string;
  concurrency?: number;
  json?: boolean;
  now?: number;
}

export function run(cli: Cli, pipelineId: string, options: RunOptions) {
  return withEngine(cli, { pipelines: true, clock: testClock(options.now, "advancing") }, async (engine, actor) => {
    const interval = intervalOf(engine, pipelineId, options);
    const result = await engine.runInterval(pipelineId, interval, {
      actor,
      reason: options.reason,
      code: options.code,
      params: parseParams(options.param),
      concurrency: options.concurrency,
      onAttempt: options.json
        ? undefined
        : (attempt) =>
            console.log(
              `  ${attempt.taskId.padEnd(24)} try ${attempt.tryNumber}  ${attempt.taskState}` +
                (attempt.errorMessage ? `  ${attempt.errorMessage}` : ""),
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
  });
}

function intervalOf(engine: Engine, pipelineId: string, options: RunOptions) {
  if (options.date && (options.start || options.end)) throw new UsageError("give --date, or --start and --end, not both");
  if (options.date) return engine.intervalForDate(pipelineId, options.date);
  if (options.start && options.end) return engine.intervalBetween(pipelineId, options.start, options.end);
  throw new UsageError("give the interval: --date YYYY-MM-DD, or --start and --end");
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
