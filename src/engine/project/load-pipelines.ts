import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { DefinitionError, DefinitionErrors } from "../../core/model/errors.ts";
import { isPipeline } from "../../core/pipeline/define.ts";
import { withDefinitionSink, type PartialPipeline } from "../../core/pipeline/definition-sink.ts";
import { locateKey, type CallSite } from "./locate-key.ts";
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

/**
 * Imports one pipeline file. A file that does not compile or throws at import gives problems,
 * never an exception. While it imports, `pipeline()` hands its problems to a sink instead of
 * throwing, so every pipeline of the file is defined and every problem of each is reported,
 * each on the line of the key it is about (`locate-key.ts`).
 */
export async function importPipelineFile(
  file: string,
  shown: string,
  version: string | null,
  importModule: ModuleImporter = importByUrl,
): Promise<{ pipelines: Pipeline[]; problems: DefinitionError[]; partial: PartialPipeline[] }> {
  const defined: DefinitionError[] = [];
  const partial: PartialPipeline[] = [];
  const imported = await oneImportAtATime(async (): Promise<{ module: Record<string, unknown> } | { error: unknown }> => {
    try {
      return { module: await withDefinitionSink((problems, read) => {
        defined.push(...problems);
        partial.push(read);
      }, () => importModule(file, version)) };
    } catch (error) {
      return { error };
    }
  });
  const source = sourceOf(file);
  const problems = defined.map((p) => placed(p, file, shown, source));
  if ("error" in imported) problems.push(...asProblems(imported.error, file, shown, source));
  const pipelines = "module" in imported ? [...new Set(Object.values(imported.module).filter(isPipeline))] : [];
  const ids = new Set<string>();
  for (const p of pipelines) {
    if (ids.has(p.id)) problems.push(new DefinitionError(`pipeline ${p.id} is defined twice in this file`, { file: shown }));
    ids.add(p.id);
  }
  // The file stops whole if any of its pipelines has a problem; the caller still checks the sound ones against the project.
  return { pipelines, problems, partial };
}

let importing: Promise<unknown> = Promise.resolve();

/** Pipeline files are imported one at a time in a process, so what reaches the definition sink came from the file being imported. */
function oneImportAtATime<T>(fn: () => Promise<T>): Promise<T> {
  const result = importing.then(fn, fn);
  importing = result.catch(() => undefined);
  return result;
}

/** A source of a file, read once and only when a problem needs a line. */
function sourceOf(file: string): () => string | null {
  let text: string | null | undefined;
  return () => {
    if (text === undefined) {
      try {
        text = readFileSync(file, "utf8");
      } catch {
        text = null;
      }
    }
    return text;
  };
}

/** A problem found in a pipeline that loaded from `file`, placed on the line of the key it is about. */
export function placeProblem(problem: DefinitionError, file: string, shown: string): DefinitionError {
  return placed(problem, file, shown, sourceOf(file));
}

/** The problem with its file, and the line of the key it is about (else of the call that defined its pipeline). */
function placed(problem: DefinitionError, file: string, shown: string, source: () => string | null): DefinitionError {
  const { key, line: _line, file: _file, ...place } = problem.place;
  const call = callSiteIn(problem, file);
  const text = key ? source() : null;
  const line = (text !== null && key ? locateKey(text, key, { call, pipelineId: place.pipeline }) : undefined) ?? call?.line;
  return new DefinitionError(bareMessage(problem), { file: shown, line, ...place });
}

/** The message without the place its error prefixed (pipeline, task), which the new error's place says again. */
function bareMessage(problem: DefinitionError): string {
  const { pipeline, task } = problem.place;
  const prefix = [pipeline ? `pipeline ${pipeline}` : "", task ? `task ${task}` : ""].filter(Boolean).join(", ");
  return prefix && problem.message.startsWith(`${prefix}: `) ? problem.message.slice(prefix.length + 2) : problem.message;
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

function asProblems(error: unknown, file: string, shown: string, source: () => string | null): DefinitionError[] {
  if (error instanceof DefinitionErrors) return error.problems.map((p) => placed(p, file, shown, source));
  if (error instanceof DefinitionError) return [placed(error, file, shown, source)];
  const e = error as Error;
  // tsx reports a compile error as "Transform failed ...\n<path>:<line>:<col>: ERROR: <text>"
  const compile = /:(\d+):\d+: ERROR: (.*)/.exec(e?.message ?? "");
  if (compile) return [new DefinitionError(`does not compile: ${compile[2]}`, { file: shown, line: Number(compile[1]) })];
  return [new DefinitionError(`could not load: ${(e?.message ?? String(error)).split("\n")[0]}`, { file: shown, line: callSiteIn(e, file)?.line })];
}

/** Where in `file` the error was raised, when its stack says so (source maps make it the original file's line and column). */
function callSiteIn(error: Error | undefined, file: string): CallSite | undefined {
  const names = [file, pathToFileURL(file).href];
  const frame = error?.stack?.split("\n").slice(1).find((l) => names.some((name) => l.includes(name)));
  const match = frame?.match(/:(\d+):(\d+)\)?$/);
  return match ? { line: Number(match[1]), column: Number(match[2]) } : undefined;
}
