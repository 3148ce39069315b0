import { dirname, join } from "node:path";
import { systemClock } from "../core/model/clock.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import type { Engine } from "../engine/engine.ts";
import type { ResolvedConfig } from "../engine/project/config.ts";
import type { Cli, GlobalOptions } from "./lazy.ts";
import { importTypeScript } from "./typescript-cache.ts";

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
  const config = await loadConfig(cwd, options.config, (file) => importTypeScript(file, projectDir));
  if (Object.keys(config.connections).length > 0) {
    const [{ registerConnectionSecrets }, { maskStandardStreams }] = await Promise.all([
      import("../engine/connections/connections.ts"),
      import("../engine/connections/secrets.ts"),
    ]);
    registerConnectionSecrets(config.connections);
    maskStandardStreams();
  }
  return config;
}

/** The config and every pipeline file (which may run the user's code at import). */
export async function loadProject(options: GlobalOptions): Promise<Project> {
  const config = await loadProjectConfig(options);
  const [{ loadPipelines }, { checkConnections }, { DefinitionErrors }] = await Promise.all([
    import("../engine/project/load-pipelines.ts"),
    import("../engine/connections/connections.ts"),
    import("../core/model/errors.ts"),
  ]);
  const pipelines = await loadPipelines(config.pipelinePaths, config.rootDir, (file) => importTypeScript(file, config.rootDir));
  const problems = checkConnections(pipelines, config.connections);
  if (problems.length === 1) throw problems[0];
  if (problems.length > 1) throw new DefinitionErrors(problems);
  return { config, pipelines };
}

export interface OpenOptions {
  /**
   * Load the pipeline files. Commands that only read the state store say false; their engine
   * knows no pipelines (`engine.pipeline(id)` fails), and they never run the user's code.
   */
  pipelines: boolean;
}

export type ProjectEngine = Engine & { config: ResolvedConfig };

/**
 * Opens the project's state and hands back an engine; the caller closes the store. The state
 * lives where IDEM_STATE_URL says, else the config's `state`, else `<stateDir>/state.db`.
 */
export async function openEngine(options: GlobalOptions, open: OpenOptions): Promise<ProjectEngine> {
  const { config, pipelines } = open.pipelines ? await loadProject(options) : { config: await loadProjectConfig(options), pipelines: undefined };
  const [{ openStore }, { Engine }] = await Promise.all([import("../store/open-store.ts"), import("../engine/engine.ts")]);
  const store = await openStore(process.env.IDEM_STATE_URL?.trim() || config.state || join(config.stateDir, "state.db"));
  try {
    await store.migrate();
    await store.ensurePools(Object.entries(config.pools).map(([name, slots]) => ({ name, slots })), systemClock.now());
  } catch (error) {
    await store.close();
    throw error;
  }
  const engine = new Engine({
    store, clock: systemClock, stateDir: config.stateDir, pipelines, projectDir: config.rootDir, frozen: config.frozen, connections: config.connections,
    watch: {
      notifiers: config.notifiers, defaultNotify: config.defaultNotify, intervalMs: config.checkerIntervalMs,
      graceMs: config.didNotRunGraceMs, staleMs: config.checkerStaleMs,
    },
  });
  return Object.assign(engine, { config });
}

/**
 * The body of most commands: open the project's engine with the global flags, hand it the acting
 * user (--user), and close the store whatever happens.
 */
export async function withEngine<T>(cli: Cli, open: OpenOptions, fn: (engine: ProjectEngine, actor: string | undefined) => Promise<T>): Promise<T> {
  const engine = await openEngine(cli.global, open);
  try {
    return await fn(engine, cli.global.user);
  } finally {
    await engine.store.close();
  }
}
