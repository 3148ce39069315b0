import { existsSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { DefinitionError, DefinitionErrors } from "../../core/model/errors.ts";
import { isPipeline } from "../../core/pipeline/define.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";

const PIPELINE_FILE = /\.(ts|mts|js|mjs)$/;
const NOT_PIPELINE_FILE = /\.(test|spec|d)\.(ts|mts|js|mjs)$/;

/**
 * Imports every pipeline file and collects the pipelines they export. All problems are gathered
 * and reported together, each naming its file. `importModule` imports one (TypeScript) file: the
 * host decides how (the CLI compiles and caches them).
 */
export async function loadPipelines(
  paths: readonly string[],
  rootDir: string,
  importModule: (file: string) => Promise<Record<string, unknown>> = (file) => import(pathToFileURL(file).href),
): Promise<Pipeline[]> {
  const problems: DefinitionError[] = [];
  const found = new Map<string, { pipeline: Pipeline; file: string }>();
  for (const file of pipelineFiles(paths, problems, rootDir)) {
    const shown = relative(rootDir, file) || file;
    let module: Record<string, unknown>;
    try {
      module = await importModule(file);
    } catch (error) {
      problems.push(...asProblems(error, shown));
      continue;
    }
    for (const value of Object.values(module)) {
      if (!isPipeline(value)) continue;
      const earlier = found.get(value.id);
      if (earlier && earlier.pipeline !== value) {
        problems.push(new DefinitionError(`pipeline ${value.id} is also defined in ${earlier.file}`, { file: shown }));
        continue;
      }
      found.set(value.id, { pipeline: value, file: shown });
    }
  }
  if (problems.length === 1) throw problems[0];
  if (problems.length > 1) throw new DefinitionErrors(problems);
  return [...found.values()].map((f) => f.pipeline).sort((a, b) => a.id.localeCompare(b.id));
}

function pipelineFiles(paths: readonly string[], problems: DefinitionError[], rootDir: string): string[] {
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
