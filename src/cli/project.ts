import { dirname, join } from "node:path";
import { systemClock } from "../core/model/clock.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import type { Engine } from "../engine/engine.ts";
import type { Store } from "../store/port.ts";
import { registerSecrets } from "./secrets.ts";
import type { ResolvedConfig } from "../engine/project/config.ts";
import type { PipelineCheck } from "../engine/project/catalog.ts";
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
  return loadConfig(cwd, options.config, (file) => importTypeScript(file, projectDir));
}

/** The config and every pipeline file (which may run the user's code at import); any broken file is an error (`idem validate`). */
export async function loadProject(options: GlobalOptions): Promise<Project> {
  const config = await loadProjectConfig(options);
  const [{ loadPipelines }, check] = await Promise.all([import("../engine/project/load-pipelines.ts"), pipelineCheck(config)]);
  return { config, pipelines: await loadPipelines(config.pipelinePaths, config.rootDir, (file, version) => importTypeScript(file, config.rootDir, version), check) };
}

/** A SQL task whose connection the config does not have stops its pipeline when the file loads. */
async function pipelineCheck(config: ResolvedConfig): Promise<PipelineCheck | undefined> {
  const { connectionProblems } = await import("../engine/connections/connections.ts");
  return (pipeline, file) => connectionProblems(pipeline, config.connections, file);
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
  const config = await loadProjectConfig(options);
  // A broken pipeline file stops only itself: the catalog keeps the others and names it.
  const catalog = open.pipelines
    ? await (await import("../engine/project/catalog.ts")).PipelineCatalog.load(config.pipelinePaths, config.rootDir, (file, version) => importTypeScript(file, config.rootDir, version), await pipelineCheck(config))
    : undefined;
  const [{ openStore }, { Engine }, { reportingStore, storeUnavailable }, { maskedStore }, { collectSecrets, referencedVariables, SecretMasker }] = await Promise.all([
    import("../store/open-store.ts"), import("../engine/engine.ts"), import("../store/unavailable.ts"),
    import("../engine/secrets/masked-store.ts"), import("../engine/secrets/masker.ts"),
  ]);
  const location = process.env.IDEM_STATE_URL?.trim() || config.state || join(config.stateDir, "state.db");
  // Connections name their passwords by variable ("$WAREHOUSE_PASSWORD"): those are secrets too.
  const connections = Object.values(config.connections).flatMap((c) => ("postgres" in c ? [c] : []));
  const secrets = collectSecrets({
    names: [...config.secrets, ...connections.flatMap((c) => [...referencedVariables(c.password), ...referencedVariables(c.postgres)])],
    stateUrl: location,
    urls: connections.map((c) => c.postgres),
  });
  // A password written in the config itself (no "$NAME") is a secret as it stands.
  secrets.push(...connections.flatMap((c) => (c.password && referencedVariables(c.password).length === 0 ? [c.password] : [])));
  registerSecrets(secrets);
  const busyTimeoutMs = config.stateBusyTimeoutMs;
  let opened: Store;
  try {
    opened = await openStore(location, { busyTimeoutMs });
  } catch (error) {
    throw storeUnavailable(error, location, busyTimeoutMs) ?? error;
  }
  const store = maskedStore(reportingStore(opened, location, busyTimeoutMs), new SecretMasker(secrets));
  try {
    await store.migrate();
    await store.ensurePools(Object.entries(config.pools).map(([name, slots]) => ({ name, slots })), systemClock.now());
  } catch (error) {
    await store.close();
    throw error;
  }
  const engine = new Engine({
    store, clock: systemClock, stateDir: config.stateDir, catalog, projectDir: config.rootDir, frozen: config.frozen, connections: config.connections,
    secrets, stateUrl: location, logMaxBytes: config.logMaxBytes, taskMemoryMb: config.taskMemoryMb, workerLeaseMs: config.workerLeaseMs,
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
    await engine.close();
    await engine.store.close();
  }
}
