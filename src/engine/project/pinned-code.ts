import { dirname } from "node:path";
import type { Pipeline } from "../../core/pipeline/types.ts";
import { CodeLibrary, CodeNotFoundError } from "./code-library.ts";
import { codeOf, pinCode } from "./code-of.ts";
import { importByUrl, importPipelineFile } from "./load-pipelines.ts";

/** What names a run's code: its id, pipeline and code version (a run, a claimed attempt). */
export interface RunCode {
  runId: string;
  pipelineId: string;
  codeVersion: string | null;
}

/**
 * The pipeline a run runs: the code it is pinned to (`codeVersion`), whatever the pipeline file
 * says now. The pipeline as loaded when it is that version; else the stored
 * bundle of that version, imported once per process (ES modules stay loaded), from where the
 * loaded pipeline's bundles are kept. A run with no code version runs the pipeline as loaded.
 */
export class PinnedCode {
  /** Per code version: its pipelines, or why they cannot be had (said once per attempt, never retried). */
  readonly #versions = new Map<string, Promise<Pipeline[] | string>>();

  /** The pipeline to run the run with, or the one line saying why its code cannot be loaded. */
  async pipelineFor(claim: RunCode, loaded: Pipeline): Promise<Pipeline | string> {
    const current = codeOf(loaded);
    if (claim.codeVersion === null || !current || current.codeVersion === claim.codeVersion) return loaded;
    const version = claim.codeVersion;
    let pipelines = this.#versions.get(version);
    if (!pipelines) {
      pipelines = this.#load(version, new CodeLibrary(current.location, dirname(current.bundle), { cacheDir: dirname(current.bundle) }));
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

/** One per process: a version's bundle is imported once (ES modules stay loaded), whoever asks. */
export const pinnedCode = new PinnedCode();
