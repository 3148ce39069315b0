import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeProject, removeProject, repo } from "../support/processes.ts";
import { dropSchema, freshSchema, schemaUrl, testPostgresUrl } from "./postgres-support.ts";

let project = "";
const schemas: { url: string; schema: string }[] = [];
afterEach(async () => {
  if (project) removeProject(project);
  project = "";
  await Promise.all(schemas.splice(0).map((s) => dropSchema(s.url, s.schema)));
});

const STATE_PASSWORD = "st4te-pw-9d8c7b";

/** Each task prints the names (and, for the state variables, the values) of its environment. */
const PIPELINE = `
import { pipeline } from "idem";
const shown = (env) => Object.keys(env).sort().map((k) => k + "=" + (/^(IDEM_STATE_URL|PGPASSWORD|WAREHOUSE_DSN|PLAIN)$/.test(k) ? env[k] : "")).join("\\n");
export const envs = pipeline("envs", {}, {
  fn: { run: () => { console.log(shown(process.env)); } },
  cmd: { command: ["bash", "-c", "env | sort"] },
  asks: { command: ["bash", "-c", "env | sort"], env: { inherit: true, pass: ["IDEM_STATE_URL"] } },
});
`;

function runWith(env: NodeJS.ProcessEnv): (task: string) => string {
  project = makeProject({ "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({});\n`, "pipelines/envs.ts": PIPELINE });
  const cli = (...args: string[]) => spawnSync(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd: project, encoding: "utf8", env: { ...process.env, ...env } });
  const run = cli("run", "envs", "--date", "2026-09-01");
  expect(run.status, run.stdout + run.stderr).toBe(0);
  return (task) => {
    const logs = cli("logs", "envs@2026-09-01", task);
    expect(logs.status, logs.stderr).toBe(0);
    return logs.stdout;
  };
}

describe("task processes do not see the state store", () => {
  it("hides IDEM_STATE_URL (SQLite) from function and command tasks, unless a command names it in env.pass", () => {
    const stateFile = join(repo, ".tmp", `env-state-${process.pid}-${Date.now()}.db`);
    const log = runWith({ IDEM_STATE_URL: stateFile, PLAIN: "kept" });
    for (const task of ["fn", "cmd"]) {
      expect(log(task)).not.toContain("IDEM_STATE_URL");
      expect(log(task)).toContain("PLAIN=kept");
    }
    expect(log("asks")).toContain(`IDEM_STATE_URL=${stateFile}`);
    spawnSync("rm", ["-f", stateFile, `${stateFile}-wal`, `${stateFile}-shm`]);
  });

  const pg = testPostgresUrl();
  it.skipIf(!pg)("hides a PostgreSQL state URL and every variable holding its password, and masks the one a task asks for", async () => {
    const schema = freshSchema();
    schemas.push({ url: pg!, schema });
    const url = new URL(schemaUrl(pg!, schema));
    url.password = STATE_PASSWORD; // the test server trusts local connections: any password is accepted
    const log = runWith({
      IDEM_STATE_URL: url.toString(),
      PGPASSWORD: STATE_PASSWORD,
      WAREHOUSE_DSN: `postgres://loader:${STATE_PASSWORD}@warehouse.internal/dw`,
      PLAIN: "kept",
    });
    for (const task of ["fn", "cmd"]) {
      const text = log(task);
      expect(text).toContain("PLAIN=kept");
      for (const name of ["IDEM_STATE_URL", "PGPASSWORD", "WAREHOUSE_DSN"]) expect(text).not.toContain(`${name}=`);
      expect(text).not.toContain(STATE_PASSWORD);
    }
    // Asked for explicitly it is there, and its password is still masked in the log.
    expect(log("asks")).toMatch(/IDEM_STATE_URL=postgres:\/\/idem:\*\*\*@/);
    expect(log("asks")).not.toContain(STATE_PASSWORD);
  });
});
