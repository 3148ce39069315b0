import { nearestName } from "../../core/model/nearest-name.ts";
import { DefinitionError } from "../../core/model/errors.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import type { Target } from "../../data/target.ts";
import type { ConnectionConfig } from "../project/config.ts";

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;

/** "$NAME" and "${NAME}" read from the environment; a name that is not set is an error naming it. */
export function expandEnvironment(text: string, where: string, env: NodeJS.ProcessEnv = process.env): string {
  return text.replace(REFERENCE, (_m, braced: string | undefined, bare: string | undefined) => {
    const name = (braced ?? bare)!;
    const value = env[name];
    if (value === undefined) throw new DefinitionError(`${where}: $${name} is not set in the environment`);
    return value;
  });
}

/** Opens a named connection: the driver is imported only now, the environment read only now. */
export async function openConnection(name: string, connections: Record<string, ConnectionConfig>): Promise<Target> {
  const connection = connections[name];
  if (!connection) throw new DefinitionError(`no connection named "${name}" in idem.config.ts${knownNames(connections)}`);
  const where = `connection ${name}`;
  if ("duckdb" in connection) return (await import("../../data/targets/duckdb.ts")).openDuckDB(expandEnvironment(connection.duckdb, where));
  if ("sqlite" in connection) return (await import("../../data/targets/sqlite.ts")).openSQLite(expandEnvironment(connection.sqlite, where));
  const url = new URL(expandEnvironment(connection.postgres, where));
  if (connection.password !== undefined) {
    const password = expandEnvironment(connection.password, where);
    url.password = encodeURIComponent(password);
  }
  const schema = connection.schema === undefined ? undefined : expandEnvironment(connection.schema, where);
  return (await import("../../data/targets/postgres.ts")).openPostgres({ url: url.toString(), schema });
}

function knownNames(connections: Record<string, ConnectionConfig>): string {
  const names = Object.keys(connections);
  return names.length ? ` (connections: ${names.join(", ")})` : " (it names none)";
}

/**
 * Every SQL task of a pipeline names a connection the config has: checked when the file loads,
 * not when the task runs. Each problem is about the task's `connection` key (the loader gives its line).
 */
export function connectionProblems(pipeline: Pick<Pipeline, "id" | "tasks">, connections: Record<string, ConnectionConfig>): DefinitionError[] {
  const problems: DefinitionError[] = [];
  for (const task of pipeline.tasks.values()) {
    if (task.kind !== "sql" || task.connection in connections) continue;
    const near = nearestName(task.connection, Object.keys(connections));
    problems.push(new DefinitionError(`unknown connection "${task.connection}"${knownNames(connections)}${near ? ` (did you mean "${near}"?)` : ""}`, {
      pipeline: pipeline.id, task: task.id, key: ["tasks", task.id, "connection"],
    }));
  }
  return problems;
}

/** The connections one attempt opened, each opened once on first use and all closed at its end. */
export class AttemptConnections {
  readonly #connections: Record<string, ConnectionConfig>;
  readonly #open = new Map<string, Promise<Target>>();

  constructor(connections: Record<string, ConnectionConfig>) {
    this.#connections = connections;
  }

  get(name: string): Promise<Target> {
    let target = this.#open.get(name);
    if (!target) {
      target = openConnection(name, this.#connections);
      this.#open.set(name, target);
    }
    return target;
  }

  async closeAll(): Promise<void> {
    const opened = [...this.#open.values()];
    this.#open.clear();
    await Promise.allSettled(opened.map(async (t) => (await t).close()));
  }
}
