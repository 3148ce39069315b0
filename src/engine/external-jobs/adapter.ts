import type { ExternalJob } from "../../core/pipeline/types.ts";
import { httpJob, type HttpJobSpec } from "./http.ts";
import { slurmJob, type SlurmJobSpec } from "./slurm.ts";
import { sparkSubmitJob, type SparkSubmitJobSpec } from "./spark-submit.ts";

/**
 * The ready-made kinds of remote job, one file each beside this one, told apart by `kind`. A new
 * adapter is a member here and a case below: a kind left out of the switch does not compile.
 */
export type ExternalAdapterSpec = SlurmJobSpec | HttpJobSpec | SparkSubmitJobSpec;

export type ExternalAdapterKind = ExternalAdapterSpec["kind"];

/** The job for an external task's `external`, from one of idem's adapters. */
export function externalJob(spec: ExternalAdapterSpec): ExternalJob<any> {
  switch (spec.kind) {
    case "slurm":
      return slurmJob(spec);
    case "http":
      return httpJob(spec);
    case "spark-submit":
      return sparkSubmitJob(spec);
    default:
      return unhandledAdapter(spec);
  }
}

function unhandledAdapter(spec: never): never {
  throw new Error(`idem has no external job adapter of kind ${JSON.stringify((spec as { kind?: unknown }).kind)}`);
}
