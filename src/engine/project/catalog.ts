import { statSync } from "node:fs";
import { relative } from "node:path";
import { DefinitionError, DefinitionErrors } from "../../core/model/errors.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import { importByUrl, importPipelineFile, pipelineFiles, placeProblem, type ModuleImporter } from "./load-pipelines.ts";

/** A pipeline file that did not load, as the log, `idem health`, `GET /health` and `idem validate` show it. */
export interface BrokenFile {
  file: string;
  line: number | null;
  message: string;
}

/**
 * Problems of a pipeline that loaded but cannot run in this project (a SQL task's unknown
 * connection, say), each about a key of its definition (`place.key`): the catalog gives file and line.
 */
export type PipelineCheck = (pipeline: Pick<Pipeline, "id" | "tasks">) => DefinitionError[];

interface LoadedFile {
  stamp: string;
  pipelines: Pipeline[];
  problems: DefinitionError[];
}

/**
 * The pipelines of a project as its files say now. Each file loads on its own: one that does
 * not compile or throws at import is reported and left out, and the others run. `refresh()`
 * loads files that were added or changed since and drops those removed; long-running processes
 * call it every few seconds.
 *
 * A changed file is imported again under a new URL (ES modules cannot be unloaded), so each
 * change costs the process one module's memory; modules that pipeline files import are not
 * loaded again here (task hosts, which start fresh, see them as they are).
 */
export class PipelineCatalog {
  readonly #paths: readonly string[];
  readonly #rootDir: string;
  readonly #files = new Map<string, LoadedFile>();
  #pathProblems: DefinitionError[] = [];
  #byId = new Map<string, { pipeline: Pipeline; file: string }>();
  #duplicates: DefinitionError[] = [];
  /** Files imported at least once: importing one again needs a new URL. */
  readonly #imported = new Set<string>();
  #refreshing: Promise<boolean> | null = null;
  readonly #listeners = new Set<() => void>();

  readonly #import: ModuleImporter;
  readonly #check: PipelineCheck | undefined;

  private constructor(paths: readonly string[], rootDir: string, importModule: ModuleImporter, check?: PipelineCheck) {
    this.#paths = paths;
    this.#rootDir = rootDir;
    this.#import = importModule;
    this.#check = check;
  }

  /** `check` leaves out (and reports) a pipeline that loaded but cannot run here. */
  static async load(paths: readonly string[], rootDir: string, importModule: ModuleImporter = importByUrl, check?: PipelineCheck): Promise<PipelineCatalog> {
    const catalog = new PipelineCatalog(paths, rootDir, importModule, check);
    await catalog.refresh();
    return catalog;
  }

  /** A catalog of pipelines that exist in memory only (tests, the engine API): nothing to reload. */
  static of(pipelines: readonly Pipeline[]): PipelineCatalog {
    const catalog = new PipelineCatalog([], "", importByUrl);
    catalog.#byId = new Map(pipelines.map((p) => [p.id, { pipeline: p, file: "" }]));
    return catalog;
  }

  pipelines(): Pipeline[] {
    return [...this.#byId.values()].map((e) => e.pipeline).sort((a, b) => a.id.localeCompare(b.id));
  }

  get(id: string): Pipeline | undefined {
    return this.#byId.get(id)?.pipeline;
  }

  /** The absolute path of the file that defines the pipeline, if it came from one. */
  fileOf(id: string): string | undefined {
    return this.#byId.get(id)?.file || undefined;
  }

  /** Every problem: files that did not load, pipeline paths that do not exist, ids defined twice. */
  problems(): DefinitionError[] {
    return [...this.#pathProblems, ...[...this.#files.values()].flatMap((f) => f.problems), ...this.#duplicates];
  }

  brokenFiles(): BrokenFile[] {
    return this.problems().map((p) => ({
      file: p.place.file ?? "",
      line: p.place.line ?? null,
      message: p.message,
    }));
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Loads what changed on disk since the last look; true when the set of definitions changed. */
  refresh(): Promise<boolean> {
    this.#refreshing ??= this.#refresh().finally(() => (this.#refreshing = null));
    return this.#refreshing;
  }

  async #refresh(): Promise<boolean> {
    if (this.#paths.length === 0) return false;
    const pathProblems: DefinitionError[] = [];
    const present = pipelineFiles(this.#paths, pathProblems, this.#rootDir);
    let changed = pathProblems.map((p) => p.message).join("\n") !== this.#pathProblems.map((p) => p.message).join("\n");
    this.#pathProblems = pathProblems;
    for (const file of [...this.#files.keys()]) {
      if (!present.includes(file)) {
        this.#files.delete(file);
        changed = true;
      }
    }
    for (const file of present) {
      const stamp = stampOf(file);
      if (this.#files.get(file)?.stamp === stamp) continue;
      const shown = relative(this.#rootDir, file) || file;
      // The first import of a file uses its plain URL (so its own relative imports share modules
      // with everyone else's); later ones need a new URL to be read again.
      const version = this.#imported.has(file) ? stamp : null;
      this.#imported.add(file);
      const loaded = await importPipelineFile(file, shown, version, this.#import);
      const problems = [...loaded.problems];
      // Pipelines with problems are checked against the project too, as far as they could be
      // read, and so are the sound ones of a file that stops: every problem at once.
      const checked = (pipeline: Pick<Pipeline, "id" | "tasks">) => (this.#check?.(pipeline) ?? []).map((problem) => placeProblem(problem, file, shown));
      for (const partial of loaded.partial) problems.push(...checked(partial));
      const fileStops = problems.length > 0;
      const pipelines = loaded.pipelines.filter((pipeline) => {
        const found = checked(pipeline);
        problems.push(...found);
        return found.length === 0 && !fileStops;
      });
      problems.sort((a, b) => (a.place.line ?? Number.MAX_SAFE_INTEGER) - (b.place.line ?? Number.MAX_SAFE_INTEGER));
      this.#files.set(file, { stamp, pipelines, problems });
      changed = true;
    }
    if (!changed) return false;
    this.#index();
    for (const listener of this.#listeners) listener();
    return true;
  }

  #index(): void {
    const byId = new Map<string, { pipeline: Pipeline; file: string }>();
    const duplicates: DefinitionError[] = [];
    for (const [file, loaded] of [...this.#files].sort(([a], [b]) => a.localeCompare(b))) {
      for (const pipeline of loaded.pipelines) {
        const earlier = byId.get(pipeline.id);
        if (earlier) {
          duplicates.push(duplicateError(pipeline.id, relative(this.#rootDir, earlier.file), relative(this.#rootDir, file)));
          continue;
        }
        byId.set(pipeline.id, { pipeline, file });
      }
    }
    this.#byId = byId;
    this.#duplicates = duplicates;
  }
}

function stampOf(file: string): string {
  try {
    const stat = statSync(file);
    return `${stat.mtimeMs}:${stat.size}`;
  } catch {
    return "gone";
  }
}

function duplicateError(id: string, first: string, second: string): DefinitionError {
  return new DefinitionError(`pipeline ${id} is also defined in ${first}`, { file: second });
}

/**
 * Imports every pipeline file (TypeScript loads directly) and collects the pipelines they
 * export. All problems are gathered and reported together, each naming its file: for commands
 * that need every file sound (`idem validate`). Long-running processes use the PipelineCatalog,
 * which runs the sound files and reports the broken ones.
 */
export async function loadPipelines(paths: readonly string[], rootDir: string, importModule: ModuleImporter = importByUrl, check?: PipelineCheck): Promise<Pipeline[]> {
  const catalog = await PipelineCatalog.load(paths, rootDir, importModule, check);
  const problems = catalog.problems();
  if (problems.length === 1) throw problems[0];
  if (problems.length > 1) throw new DefinitionErrors(problems);
  return catalog.pipelines();
}
