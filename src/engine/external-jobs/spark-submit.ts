import type { ExternalJob, ExternalStatus, TaskContext } from "../../core/pipeline/types.ts";
import { runTool } from "./run-tool.ts";

/** A Spark application submitted in cluster mode, as `externalJob({ kind: "spark-submit", ... })` takes it. */
export interface SparkSubmitJobSpec {
  kind: "spark-submit";
  /** The cluster's master URL: `spark://host:7077` (standalone, REST submission) or `k8s://https://host:6443`. */
  master: string;
  /** The application and its arguments, after spark-submit's own options: `["--class", "Main", "s3://jars/etl.jar", ctx.businessDate]`. */
  application: readonly string[] | ((ctx: TaskContext<any>) => readonly string[]);
  /** `--conf` settings. */
  conf?: Record<string, string>;
  /** The spark-submit executable. Default `spark-submit` on PATH. */
  sparkSubmit?: string;
  env?: Record<string, string>;
}

/** Driver states of `spark-submit --status` that mean the application has not ended. */
const RUNNING = new Set(["SUBMITTED", "RUNNING", "RELAUNCHING", "PENDING", "UNKNOWN"]);
const SUCCEEDED = new Set(["FINISHED", "SUCCEEDED"]);

/**
 * A Spark application in cluster mode: `spark-submit --deploy-mode cluster --name <key>` submits
 * it (the application's name carries the key), `spark-submit --status <submission id>` polls it
 * and `spark-submit --kill <submission id>` cancels it. spark-submit has no way to find an
 * application by name, so a submit whose answer was lost cannot be told from none: the key in
 * the name is there for the cluster's UI and for a check of your own.
 */
export function sparkSubmitJob(spec: Omit<SparkSubmitJobSpec, "kind">): ExternalJob<string> {
  const bin = spec.sparkSubmit ?? "spark-submit";
  const env = spec.env ? { ...process.env, ...spec.env } : process.env;
  const run = async (args: string[]) => {
    const result = await runTool([bin, "--master", spec.master, ...args], { env });
    const text = `${result.stdout}\n${result.stderr}`;
    if (result.code !== 0) throw new Error(`spark-submit ${args.slice(0, 2).join(" ")} failed (exit ${result.code}): ${text.trim().split("\n").slice(-5).join(" | ")}`);
    return text;
  };
  return {
    adapter: "spark-submit",
    async submit(ctx, key) {
      const application = typeof spec.application === "function" ? spec.application(ctx) : spec.application;
      const conf = Object.entries(spec.conf ?? {}).flatMap(([k, v]) => ["--conf", `${k}=${v}`]);
      const text = await run(["--deploy-mode", "cluster", "--name", key, ...conf, ...application]);
      // standalone: "Driver successfully submitted as driver-2026..." or a REST answer's "submissionId" : "driver-..."; Kubernetes: "submission ID spark:pod"
      const id = /submitted as (\S+)/.exec(text)?.[1] ?? /"submissionId"\s*:\s*"([^"]+)"/.exec(text)?.[1] ?? /submission ID (\S+)/i.exec(text)?.[1];
      if (!id) throw new Error(`spark-submit did not say the submission's id: ${text.trim().split("\n").slice(-5).join(" | ")}`);
      return id;
    },
    async poll(submissionId): Promise<ExternalStatus> {
      const text = await run(["--status", submissionId]);
      const found = /"driverState"\s*:\s*"(\w+)"/.exec(text)?.[1] ?? /driverState:?\s*(\w+)/i.exec(text)?.[1] ?? /phase:\s*(\w+)/i.exec(text)?.[1];
      if (!found) throw new Error(`spark-submit --status ${submissionId} did not say the driver's state: ${text.trim().split("\n").slice(-5).join(" | ")}`);
      const state = found.toUpperCase();
      if (RUNNING.has(state)) return { state: "running" };
      if (SUCCEEDED.has(state)) return { state: "succeeded", summary: { sparkSubmission: submissionId, driverState: state } };
      return { state: "failed", error: `Spark driver ${submissionId} ended ${state}` };
    },
    async cancel(submissionId) {
      await run(["--kill", submissionId]);
    },
  };
}
