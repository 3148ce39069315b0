import type { Clock } from "../../core/model/clock.ts";
import { ErrorClass } from "../../core/model/error-classes.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import type { AttemptFinish, ClaimedAttempt } from "../../store/port.ts";
import { AttemptLog } from "../executor/attempt-log.ts";
import type { SecretMasker } from "../secrets/masker.ts";
import { CodeLibrary, CodeNotFoundError } from "../project/code-library.ts";
import { codeOf, pinCode } from "../project/code-of.ts";
import { importByUrl, importPipelineFile } from "../project/load-pipelines.ts";

/**
 * The pipeline an attempt runs: the code its run is pinned to (`claim.codeVersion`), whatever
 * the pipeline file says now. The pipeline as loaded when it is that version; else the stored
 * bundle of that version, imported once per process (ES modules stay loaded), from where the
 * loaded pipeline's bundles are kept. A run with no code version runs the pipeline as loaded.
 */
export class PinnedCode {
  readonly #projectDir: string;
  /** Per code version: its pipelines, or why they cannot be had (said once per attempt, never retried). */
  readonly #versions = new Map<string, Promise<Pipeline[] | string>>();

  constructor(projectDir: string) {
    this.#projectDir = projectDir;
  }

  /** The pipeline to run the claim with, or the one line saying why the run's code cannot be loaded. */
  async pipelineFor(claim: ClaimedAttempt, loaded: Pipeline): Promise<Pipeline | string> {
    const current = codeOf(loaded);
    if (claim.codeVersion === null || !current || current.codeVersion === claim.codeVersion) return loaded;
    const version = claim.codeVersion;
    let pipelines = this.#versions.get(version);
    if (!pipelines) {
      pipelines = this.#load(version, new CodeLibrary(current.location, this.#projectDir));
      this.#versions.set(version, pipelines);
      // A bundle that could not be had may be copied in later: ask again next time.
      void pipelines.then((p) => typeof p === "string" && this.#versions.delete(version));
    }
    const found = await pipelines;
    const where = `run ${claim.runId}: code version ${version} of pipeline ${claim.pipelineId}`;
    if (typeof found === "string") return `${where} cannot be loaded: ${found}`;
    return found.find((p) => p.id === claim.pipelineId) ?? `${where} defines no pipeline ${claim.pipelineId} (looked in ${current.location})`;
  }

  async #load(version: string, library: CodeLibrary): Promise<Pipeline[] | string> {
    let bundle: string;
    try {
      bundle = library.copyOf(version);
    } catch (error) {
      if (error instanceof CodeNotFoundError) return error.message.replace(`code version ${version}: `, "");
      throw error;
    }
    const loaded = await importPipelineFile(bundle, bundle, null, importByUrl);
    if (loaded.problems.length > 0) return `${bundle}: ${loaded.problems[0]!.message}`;
    const stored = { codeVersion: version, packages: {}, file: bundle, location: library.location, bundle };
    for (const pipeline of loaded.pipelines) pinCode(pipeline, stored);
    return loaded.pipelines;
  }
}

/** An attempt whose run's code cannot be loaded: failed for good (another try would find the same), said in its log too. */
export function codeMissingFinish(claim: ClaimedAttempt, why: string, options: { workerId: string; clock: Clock; logMaxBytes?: number | null; masker?: SecretMasker }): AttemptFinish {
  const now = options.clock.now();
  try {
    const log = new AttemptLog(claim.logPath, options.clock, { maxBytes: options.logMaxBytes ?? null, masker: options.masker });
    log.line("ERROR", `${ErrorClass.DefinitionError}: ${why}`);
    log.close();
  } catch {
    // a log we cannot write must not hide the result
  }
  return {
    attemptId: claim.attemptId, workerId: options.workerId, now, outcome: "failed", retryable: false, retryAt: null,
    exitCode: null, errorClass: ErrorClass.DefinitionError, errorMessage: why, summary: null, skipReason: null,
  };
}
