import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { DefinitionError, DefinitionErrors } from "../../core/model/errors.ts";
import { isPipeline } from "../../core/pipeline/define.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";

const PIPELINE_FILE = /\.(ts|mts|js|mjs)$/;
const NOT_PIPELINE_FILE = /\.(test|spec|d)\.(ts|mts|js|mjs)$/;

/**
 * Imports one (TypeScript) file: the host decides how (the CLI compiles and caches them).
 * `version`, when given, must make a new module URL, so that a changed file is read again.
 */
export type ModuleImporter = (file: string, version: string | null) => Promise<Record<string, unknown>>;

export const importByUrl: ModuleImporter = (file, version) => import(versioned(pathToFileURL(file).href, version));

/** A module URL that differs for each version of a file (ES modules cannot be unloaded). */
export function versioned(url: string, version: string | null): string {
  return version === null ? url : `${url}?v=${encodeURIComponent(version)}`;
}

/** Imports one pipeline file. A file that does not compile or throws at import gives problems, never an exception. */
export async function importPipelineFile(
  file: string,
  shown: string,
  version: string | null,
  importModule: ModuleImporter = importByUrl,
): Promise<{ pipelines: Pipeline[]; problems: DefinitionError[] }> {
  let module: Record<string, unknown>;
  try {
    module = await importModule(file, version);
  } catch (error) {
    return { pipelines: [], problems: asProblems(error, shown) };
  }
  const pipelines = [...new Set(Object.values(module).filter(isPipeline))];
  const ids = new Set<string>();
  const problems: DefinitionError[] = [];
  for (const p of pipelines) {
    if (ids.has(p.id)) problems.push(new DefinitionError(`pipeline ${p.id} is defined twice in this file`, { file: shown }));
    ids.add(p.id);
  }
  return { pipelines: problems.length ? [] : pipelines, problems };
}

export function pipelineFiles(paths: readonly string[], problems: DefinitionError[], rootDir: string): string[] {
  const files: string[] = [];
  const walk = (path: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      const full = join(path, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (PIPELINE_FILE.test(entry.name) && !NOT_PIPELINE_FILE.test(entry.name)) files.push(full);
    }
  };
  for (const path of paths) {
    if (!existsSync(path)) {
      problems.push(new DefinitionError(`pipeline path does not exist`, { file: relative(rootDir, path) || path }));
    } else if (statSync(path).isDirectory()) walk(path);
    else files.push(path);
  }
  return files;
}

function asProblems(error: unknown, file: string): DefinitionError[] {
  if (error instanceof DefinitionErrors) {
    const line = lineIn(error, file);
    return error.problems.map((p) => new DefinitionError(p.message, { file, line }));
  }
  if (error instanceof DefinitionError) return [new DefinitionError(error.message, { file, line: lineIn(error, file) })];
  const e = error as Error;
  // tsx reports a compile error as "Transform failed ...\n<path>:<line>:<col>: ERROR: <text>"
  const compile = /:(\d+):\d+: ERROR: (.*)/.exec(e?.message ?? "");
  if (compile) return [new DefinitionError(`does not compile: ${compile[2]}`, { file, line: Number(compile[1]) })];
  return [new DefinitionError(`could not load: ${(e?.message ?? String(error)).split("\n")[0]}`, { file, line: lineIn(e, file) })];
}

/** The line in `file` where the error was raised, when its stack says so. */
function lineIn(error: Error, file: string): number | undefined {
  const match = error?.stack?.split("\n").find((l) => l.includes(file))?.match(/:(\d+):\d+\)?$/);
  return match ? Number(match[1]) : undefined;
}
