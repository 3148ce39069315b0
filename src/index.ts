/** The authoring API: what a pipeline file imports. */
export { pipeline, isPipeline } from "./core/pipeline/define.ts";
export type {
  Pipeline,
  PipelineOptions,
  TaskContext,
  TaskFunction,
  TaskSpec,
  TaskLogger,
  Summary,
  SummaryOf,
  SqlTaskSpec,
  Params,
  TaskPolicyInput,
} from "./core/pipeline/types.ts";
export { daily, hourly, weekly, monthly, cron, manual } from "./core/time/index.ts";
export type { Timetable, Interval, DstPolicy } from "./core/time/index.ts";
export { DataError, DefinitionError } from "./core/model/errors.ts";
export type { TriggerRule } from "./core/policy/trigger-rules.ts";
export { defineConfig, type IdemConfig, type ConnectionConfig } from "./engine/project/config.ts";
export { fileExists, sqlReturnsRow } from "./engine/sensors/checks.ts";
export type { SensorCheck, TaskConnection, ExternalJob, ExternalStatus } from "./core/pipeline/types.ts";
export { externalJob, type ExternalAdapterSpec } from "./engine/external-jobs/adapter.ts";
export { slurmJob, type SlurmJobSpec, type SlurmHandle } from "./engine/external-jobs/slurm.ts";
export { httpJob, type HttpJobSpec } from "./engine/external-jobs/http.ts";
export { sparkSubmitJob, type SparkSubmitJobSpec } from "./engine/external-jobs/spark-submit.ts";
// What `ctx.connection(name)` is (its interface merges into TaskConnection).
export type { Target } from "./data/target.ts";
