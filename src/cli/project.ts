import { join } from "node:path";
import type { Command } from "commander";
import { systemClock } from "../core/model/clock.ts";
import { Engine } from "../engine/engine.ts";
import { loadConfig, type ResolvedConfig } from "../engine/project/config.ts";
import { loadPipelines } from "../engine/project/load-pipelines.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import { openStore } from "../store/open-store.ts";
import type { Store } from "../store/port.ts";
import { reportingStore, storeUnavailable } from "../store/unavailable.ts";
import { PipelineCatalog } from "../engine/project/catalog.ts";
import { collectSecrets, SecretMasker } from "../engine/secrets/masker.ts";
import { maskedStore } from "../engine/secrets/masked-store.ts";
import { registerSecrets } from "./secrets.ts";

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

/** The config and every pipeline; any broken pipeline file is an error (for `idem validate`). */
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
  const config = await loadConfig(options.cwd ?? process.cwd(), options.config);
  // A broken pipeline file stops only itself: the catalog keeps the others and names it.
  const catalog = await PipelineCatalog.load(config.pipelinePaths, config.rootDir);
  const location = process.env.IDEM_STATE_URL?.trim() || config.state || join(config.stateDir, "state.db");
  const secrets = collectSecrets({ names: config.secrets, stateUrl: location });
  registerSecrets(secrets);
  let opened: Store;
  try {
    opened = openStore(location, { busyTimeoutMs: config.stateBusyTimeoutMs });
  } catch (error) {
    throw storeUnavailable(error, location, config.stateBusyTimeoutMs) ?? error;
  }
  const store = maskedStore(reportingStore(opened, location, config.stateBusyTimeoutMs), new SecretMasker(secrets));
  await store.migrate();
  await store.ensurePools(Object.entries(config.pools).map(([name, slots]) => ({ name, slots })), systemClock.now());
  const engine = new Engine({
    store, clock: systemClock, stateDir: config.stateDir, pipelines: [], catalog, projectDir: config.rootDir, frozen: config.frozen,
    secrets, logMaxBytes: config.logMaxBytes, taskMemoryMb: config.taskMemoryMb, workerLeaseMs: config.workerLeaseMs,
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
      await engine.close();
      await engine.store.close();
    }
  };
}
