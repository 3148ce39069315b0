import { pathToFileURL } from "node:url";
import { isPipeline } from "../../core/pipeline/define.ts";
import { BundleBuildError } from "./build-bundle.ts";
import type { CodeLibrary } from "./code-library.ts";
import { pinCode } from "./code-of.ts";
import { importByUrl, type ModuleImporter } from "./load-pipelines.ts";

/**
 * Imports a pipeline file as its stored bundle, so that the pipelines a process loads are the
 * code runs are pinned to: each pipeline it exports knows its code version (`codeOf`). A file
 * the compiler refuses is imported the usual way, which reports the problem on its line.
 */
export function bundledImporter(library: CodeLibrary, usual: ModuleImporter = importByUrl): ModuleImporter {
  return async (file, version) => {
    let code;
    try {
      code = await library.keep(file);
    } catch (error) {
      if (error instanceof BundleBuildError) return usual(file, version);
      throw error;
    }
    process.setSourceMapsEnabled(true);
    // One URL per content: an unchanged file loads once, a changed one is a new module.
    const module = (await import(pathToFileURL(code.bundle).href)) as Record<string, unknown>;
    for (const value of Object.values(module)) if (isPipeline(value)) pinCode(value, code);
    return module;
  };
}
