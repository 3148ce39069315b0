import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ExternalJob, ExternalStatus, TaskContext } from "../../core/pipeline/types.ts";
import { lastLines, runTool } from "./run-tool.ts";

/** A Slurm batch job, as `externalJob({ kind: "slurm", ... })` or `slurmJob(...)` takes it. */
export interface SlurmJobSpec {
  kind: "slurm";
  /** The batch script (with its `#!` line and any `#SBATCH` lines), or a function of the context that writes it. */
  script: string | ((ctx: TaskContext<any>) => string);
  /** More `sbatch` arguments (`--partition=batch`, `--time=01:00:00`, ...). */
  sbatchArgs?: readonly string[] | ((ctx: TaskContext<any>) => readonly string[]);
  /**
   * Where the job's output file is written (`<outputDir>/<key>-<job id>.out`): a folder the
   * compute nodes and the idem worker both see. Default `$TMPDIR/idem-slurm`.
   */
  outputDir?: string;
  /** Exit codes that mean "the data is wrong": not retried. Default [65]. */
  dataErrorExitCodes?: readonly number[];
  /** How many last lines of the job's output come back into the attempt's log. Default 50. */
  logLines?: number;
  /** Variables for the Slurm tools (SLURM_CONF, say); default this process's environment. */
  env?: Record<string, string>;
}

export interface SlurmHandle {
  jobId: string;
  output: string;
}

/** Slurm's job states that mean the job has not ended (`scontrol show job`'s JobState). */
const RUNNING_STATES = new Set(["PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED"]);

/**
 * A Slurm job: `sbatch --parsable --job-name=<key>` submits it, `scontrol show job` polls it,
 * `scancel` cancels it. The key is the job's name: before submitting, `squeue --name=<key>`
 * looks for a job of that name slurmctld still knows (pending, running, or ended within
 * `MinJobAge`), and answers it instead of submitting a second one, so a submit whose answer was
 * lost does not start a second job. The job's output file is read back for the attempt's log.
 */
export function slurmJob(spec: Omit<SlurmJobSpec, "kind">): ExternalJob<SlurmHandle> {
  const env = spec.env ? { ...process.env, ...spec.env } : process.env;
  const outputDir = spec.outputDir ?? join(process.env.TMPDIR ?? "/tmp", "idem-slurm");
  const dataErrors = spec.dataErrorExitCodes ?? [65];
  const logLines = spec.logLines ?? 50;
  const tool = async (argv: string[], input?: string) => {
    const result = await runTool(argv, { env, input });
    if (result.code !== 0) throw new Error(`${argv.join(" ")} failed (exit ${result.code}): ${(result.stderr || result.stdout).trim()}`);
    return result.stdout;
  };
  return {
    adapter: "slurm",
    async submit(ctx, key) {
      const known = (await tool(["squeue", "--noheader", `--name=${key}`, "--states=all", "--format=%i"])).trim().split("\n").filter(Boolean);
      if (known.length > 0) return { jobId: known[0]!, output: join(outputDir, `${key}-${known[0]}.out`) };
      mkdirSync(outputDir, { recursive: true });
      const script = typeof spec.script === "function" ? spec.script(ctx) : spec.script;
      const args = typeof spec.sbatchArgs === "function" ? spec.sbatchArgs(ctx) : spec.sbatchArgs ?? [];
      const out = await tool(["sbatch", "--parsable", `--job-name=${key}`, `--output=${join(outputDir, `${key}-%j.out`)}`, ...args], script);
      // --parsable prints "<job id>" or "<job id>;<cluster>"
      const jobId = out.trim().split(";")[0]!;
      if (!/^\d+$/.test(jobId)) throw new Error(`sbatch answered ${JSON.stringify(out.trim())}, not a job id`);
      return { jobId, output: join(outputDir, `${key}-${jobId}.out`) };
    },
    async poll(handle): Promise<ExternalStatus> {
      const result = await runTool(["scontrol", "show", "job", "--oneliner", handle.jobId], { env });
      const log = existsSync(handle.output) ? lastLines(readFileSync(handle.output, "utf8"), logLines) : undefined;
      if (result.code !== 0) {
        return { state: "failed", error: `slurmctld no longer knows job ${handle.jobId} (${(result.stderr || result.stdout).trim()}): it ended longer ago than MinJobAge, and how is not known`, log };
      }
      const fields = parseFields(result.stdout);
      const state = (fields.JobState ?? "UNKNOWN").split("+")[0]!;
      if (RUNNING_STATES.has(state)) return { state: "running", log };
      const exitCode = Number((fields.ExitCode ?? "0:0").split(":")[0]);
      if (state === "COMPLETED" && exitCode === 0) return { state: "succeeded", summary: { slurmJobId: handle.jobId, exitCode }, log };
      const reason = fields.Reason && fields.Reason !== "None" ? `, ${fields.Reason}` : "";
      return { state: "failed", error: `Slurm job ${handle.jobId} ended ${state} (exit code ${exitCode}${reason})`, dataError: dataErrors.includes(exitCode), log };
    },
    async cancel(handle) {
      const result = await runTool(["scancel", handle.jobId], { env });
      // Cancelling a job that has ended does nothing, as a cancel must.
      if (result.code !== 0 && !/already completing or completed|Invalid job id/i.test(result.stderr)) {
        throw new Error(`scancel ${handle.jobId} failed (exit ${result.code}): ${result.stderr.trim()}`);
      }
    },
  };
}

/** `Key=Value` pairs of `scontrol show job --oneliner` (values have no spaces, but for the command). */
function parseFields(line: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const part of line.trim().split(/\s+/)) {
    const eq = part.indexOf("=");
    if (eq > 0 && !(part.slice(0, eq) in fields)) fields[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return fields;
}
