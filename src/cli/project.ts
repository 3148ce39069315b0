import { dirname } from "node:path";
import type { Pipeline } from "../core/pipeline/types.ts";
import type { Engine } from "../engine/engine.ts";
import { registerSecrets } from "./secrets.ts";
import type { ResolvedConfig } from "../engine/project/config.ts";
import type { Cli, GlobalOptions } from "./lazy.ts";
import { importTypeScript } from "../engine/project/typescript-cache.ts";
import type { TestClock } from "./test-clock.ts";

export type { GlobalOptions } from "./lazy.ts";

export interface Project {
  config: ResolvedConfig;
  pipelines: Pipeline[];
}

/** The project's config alone: enough for commands that read only the state store. */
export async function loadProjectConfig(options: GlobalOptions): Promise<ResolvedConfig> {
  const { findConfig, loadConfig } = await import("../engine/project/config.ts");
  const cwd = options.cwd ?? process.cwd();
  const projectDir = dirname(findConfig(cwd, options.config));
  return loadConfig(cwd, options.config, (file) => importTypeScript(file, projectDir));
}

/** The config and every pipeline file (which may run the user's code at import); any broken file is an error (`idem validate`). */
export async function loadProject(options: GlobalOptions): Promise<Project> {
  const config = await loadProjectConfig(options);
  const { loadProjectPipelines } = await import("../engine/compose.ts");
  return { config, pipelines: await loadProjectPipelines(config, (file, version) => importTypeScript(file, config.rootDir, version)) };
}

export interface OpenOptions {
  /**
   * Load the pipeline files. Commands that only read the state store say false; their engine
   * knows no pipelines (`engine.pipeline(id)` fails), and they never run the user's code.
   */
  pipelines: boolean;
  /** A test clock (`--now`, IDEM_NOW) instead of the system's: announced on stderr, and marked on what is recorded. */
  clock?: TestClock;
}

/**
 * The project's engine, built by the engine's composition root (`openProject`) from the config
 * the global flags find; the CLI adds only how its files are imported. The caller closes it.
 */
export async function openEngine(options: GlobalOptions, open: OpenOptions): Promise<Engine> {
  const config = await loadProjectConfig(options);
  const { openProject } = await import("../engine/compose.ts");
  if (open.clock) process.stderr.write(`idem: ${open.clock.announce}\n`);
  return openProject(config, {
    pipelines: open.pipelines,
    clock: open.clock?.clock,
    clockNote: open.clock?.note,
    importModule: (file, version) => importTypeScript(file, config.rootDir, version),
    onSecrets: registerSecrets,
  });
}

/**
 * The body of most commands: open the project's engine with the global flags, hand it the acting
 * user (--user), and close it (task hosts, store) whatever happens.
 */
export async function withEngine<T>(cli: Cli, open: OpenOptions, fn: (engine: Engine, actor: string | undefined) => Promise<T>): Promise<T> {
  const engine = await openEngine(cli.global, open);
  try {
    return await fn(engine, cli.global.user);
  } finally {
    await engine.close();
  }
}
