import { join } from "node:path";
import type { Command } from "commander";
import { systemClock } from "../core/model/clock.ts";
import { Engine } from "../engine/engine.ts";
import { loadConfig, type ResolvedConfig } from "../engine/project/config.ts";
import { loadPipelines } from "../engine/project/load-pipelines.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import { openStore } from "../store/open-store.ts";

export interface GlobalOptions {
  /** The folder to look for idem.config.ts in (default: the current one). */
  cwd?: string;
  config?: string;
  verbose?: boolean;
  user?: string;
}

export interface Project {
  config: ResolvedConfig;
  pipelines: Pipeline[];
}

export async function loadProject(options: GlobalOptions): Promise<Project> {
  const config = await loadConfig(options.cwd ?? process.cwd(), options.config);
  const pipelines = await loadPipelines(config.pipelinePaths, config.rootDir);
  return { config, pipelines };
}

/**
 * Opens the project's state and hands back an engine; the caller closes the store. The state
 * lives where IDEM_STATE_URL says, else the config's `state`, else `<stateDir>/state.db`.
 */
export async function openEngine(options: GlobalOptions): Promise<Engine & { config: ResolvedConfig }> {
  const { config, pipelines } = await loadProject(options);
  const store = openStore(process.env.IDEM_STATE_URL?.trim() || config.state || join(config.stateDir, "state.db"));
  await store.migrate();
  await store.ensurePools(Object.entries(config.pools).map(([name, slots]) => ({ name, slots })), systemClock.now());
  const engine = new Engine({
    store, clock: systemClock, stateDir: config.stateDir, pipelines, projectDir: config.rootDir, frozen: config.frozen,
    watch: {
      notifiers: config.notifiers, defaultNotify: config.defaultNotify, intervalMs: config.checkerIntervalMs,
      graceMs: config.didNotRunGraceMs, staleMs: config.checkerStaleMs,
    },
  });
  return Object.assign(engine, { config });
}

export type ProjectEngine = Awaited<ReturnType<typeof openEngine>>;

/**
 * The body of most commands: open the project's engine with the global flags, hand it the acting
 * user (--user), and close the store whatever happens.
 */
export function engineAction(program: Command) {
  return async <T>(fn: (engine: ProjectEngine, actor: string | undefined) => Promise<T>): Promise<T> => {
    const global = program.opts<GlobalOptions>();
    const engine = await openEngine(global);
    try {
      return await fn(engine, global.user);
    } finally {
      await engine.store.close();
    }
  };
}
