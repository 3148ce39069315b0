/**
 * The proof across machines: three hosts on one machine, built from network namespaces joined
 * by a bridge (veth pairs, iproute2). PostgreSQL runs on host "db" (a throwaway server of its
 * own, listening only on db's address), a worker on each of h1 and h2, the scheduler on h1.
 * A 30-day daily pipeline loads each day into a table on db with a replace-where; h2's worker is
 * killed with -9 in the middle. Where namespaces cannot be made (no privilege), the same scenario
 * runs with processes on loopback against the test server, and the test says so
 * (IDEM_TEST_NO_NETNS=1 asks for that on purpose); under CI=true that is a failure instead,
 * unless asked for, so CI never passes a proof across machines that it did not make.
 */
import { execFileSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, mkdirSync, appendFileSync, rmSync, existsSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeProject, removeProject, repo, startProcess, waitFor } from "../support/processes.ts";
import { dropSchema, freshSchema, schemaUrl, testPostgresUrl } from "./postgres-support.ts";

const DAYS = 30;
const testUrl = testPostgresUrl();
const tag = randomBytes(2).toString("hex");
const subnet = `10.${200 + (parseInt(tag, 16) % 50)}.${parseInt(tag, 16) % 250}`;
const hosts = { db: `idem-db-${tag}`, h1: `idem-h1-${tag}`, h2: `idem-h2-${tag}` };
const address = { db: `${subnet}.1`, h1: `${subnet}.2`, h2: `${subnet}.3`, here: `${subnet}.254` };
const bridge = `idbr${tag}`;
const pgDir = `/tmp/idem-netns-${tag}`;
const pgBin = (() => {
  try {
    return execFileSync("sh", ["-c", "ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1"], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
})();

interface Cluster {
  /** How the hosts (and this test) reach PostgreSQL. */
  url: string;
  /** Runs `idem <args>` on a host. */
  start(host: "h1" | "h2", project: string, ...args: string[]): Proc;
  mode: "namespaces" | "loopback";
}

interface Proc {
  child: ChildProcess;
  output(): string;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"], timeout: 30_000, encoding: "utf8" });
const quietly = (fn: () => unknown) => {
  try {
    fn();
  } catch {
    // cleaning up what may not exist
  }
};

function spawnIdem(argv: string[], project: string): Proc {
  return startProcess(argv, { cwd: project, env: { ...process.env, IDEM_STATE_URL: "" } });
}

/** Builds db, h1 and h2, and starts PostgreSQL on db. Throws (after undoing its work) if it cannot. */
function buildNamespaces(): Cluster {
  if (process.env.IDEM_TEST_NO_NETNS === "1") throw new Error("IDEM_TEST_NO_NETNS=1");
  if (!pgBin) throw new Error("no PostgreSQL server binaries to start a server on host db");
  try {
    run("ip", ["link", "add", bridge, "type", "bridge"]);
    run("ip", ["link", "set", bridge, "up"]);
    run("ip", ["addr", "add", `${address.here}/24`, "dev", bridge]);
    for (const [name, ns] of Object.entries(hosts) as [keyof typeof hosts, string][]) {
      const outside = `idv${tag}${name}`;
      const inside = `idp${tag}${name}`;
      run("ip", ["netns", "add", ns]);
      run("ip", ["link", "add", outside, "type", "veth", "peer", "name", inside]);
      run("ip", ["link", "set", inside, "netns", ns]);
      run("ip", ["netns", "exec", ns, "ip", "link", "set", inside, "name", "eth0"]);
      run("ip", ["netns", "exec", ns, "ip", "addr", "add", `${address[name]}/24`, "dev", "eth0"]);
      run("ip", ["netns", "exec", ns, "ip", "link", "set", "eth0", "up"]);
      run("ip", ["netns", "exec", ns, "ip", "link", "set", "lo", "up"]);
      run("ip", ["link", "set", outside, "master", bridge]);
      run("ip", ["link", "set", outside, "up"]);
    }
    // A server of its own on host db: initdb refuses root, so it belongs to the postgres user.
    mkdirSync(pgDir, { recursive: true });
    chownSync(pgDir, Number(run("id", ["-u", "postgres"]).trim()), Number(run("id", ["-g", "postgres"]).trim()));
    run("runuser", ["-u", "postgres", "--", `${pgBin}/initdb`, "-D", `${pgDir}/data`, "-U", "idem", "--auth=trust", "-E", "UTF8"]);
    appendFileSync(`${pgDir}/data/pg_hba.conf`, `host all all ${subnet}.0/24 trust\n`);
    run("ip", ["netns", "exec", hosts.db, "runuser", "-u", "postgres", "--", `${pgBin}/pg_ctl`, "-D", `${pgDir}/data`, "-l", `${pgDir}/server.log`,
      "-w", "-t", "30", "-o", `-h ${address.db} -p 5432 -k ${pgDir} -c fsync=off -c synchronous_commit=off -c max_connections=100`, "start"]);
    run("ip", ["netns", "exec", hosts.db, "runuser", "-u", "postgres", "--", `${pgBin}/createdb`, "-h", address.db, "-p", "5432", "-U", "idem", "idem"]);
  } catch (error) {
    tearDownNamespaces();
    throw error;
  }
  return {
    url: `postgres://idem@${address.db}:5432/idem`,
    mode: "namespaces",
    start: (host, project, ...args) =>
      spawnIdem(["ip", "netns", "exec", hosts[host], process.execPath, join(repo, "bin/idem.js"), ...args], project),
  };
}

function tearDownNamespaces(): void {
  if (pgBin && existsSync(`${pgDir}/data`)) {
    quietly(() => run("ip", ["netns", "exec", hosts.db, "runuser", "-u", "postgres", "--", `${pgBin}/pg_ctl`, "-D", `${pgDir}/data`, "-m", "immediate", "stop"]));
  }
  for (const ns of Object.values(hosts)) quietly(() => run("ip", ["netns", "del", ns]));
  for (const name of Object.keys(hosts)) quietly(() => run("ip", ["link", "del", `idv${tag}${name}`]));
  quietly(() => run("ip", ["link", "del", bridge]));
  rmSync(pgDir, { recursive: true, force: true });
}

/** The day's rows: the same for a given day whoever computes them, however often. */
const LOADER = `
export const TABLE_SQL = "CREATE TABLE IF NOT EXISTS sales_daily (day date NOT NULL, store int NOT NULL, amount numeric(12,2) NOT NULL)";
export async function replaceDay(client, table, day) {
  await client.query("BEGIN");
  await client.query("DELETE FROM " + table + " WHERE day = $1", [day]);
  await client.query(
    "INSERT INTO " + table + " (day, store, amount) " +
    "SELECT $1::date, s, round(((hashtext($1 || ':' || s) & 65535) / 100.0)::numeric, 2) FROM generate_series(1, 5) AS s",
    [day],
  );
  await client.query("COMMIT");
}
`;

let cluster: Cluster | null = null;
let project: string | null = null;
let stateSchema: string | null = null;
const procs: Proc[] = [];

describe.skipIf(!testUrl)("the proof across machines", () => {
  beforeAll(() => {
    try {
      cluster = buildNamespaces();
      console.info(`netns cluster: hosts ${hosts.db} (${address.db}, PostgreSQL), ${hosts.h1} (${address.h1}), ${hosts.h2} (${address.h2})`);
    } catch (error) {
      if (process.env.CI === "true" && process.env.IDEM_TEST_NO_NETNS !== "1") {
        throw new Error(`netns cluster: CI=true, and network namespaces cannot be used here: ${(error as Error).message.split("\n")[0]}`);
      }
      console.warn(
        `netns cluster: network namespaces cannot be used here (${(error as Error).message.split("\n")[0]}); ` +
          "running the same scenario with processes on loopback against the test server",
      );
      const start = (_host: string, dir: string, ...args: string[]) => spawnIdem([process.execPath, join(repo, "bin/idem.js"), ...args], dir);
      cluster = { url: testUrl!, mode: "loopback", start };
    }
  }, 90_000);

  afterAll(async () => {
    await Promise.all(procs.splice(0).map((p) => p.stop()));
    if (project) removeProject(project);
    if (cluster?.mode === "loopback" && stateSchema) await dropSchema(testUrl!, stateSchema).catch(() => {});
    if (cluster?.mode === "namespaces") tearDownNamespaces();
  }, 60_000);

  it(`runs a ${DAYS}-day catch-up on two hosts; the killed host's attempts are retried on the other and the table equals a clean run`, async () => {
    const c = cluster!;
    stateSchema = freshSchema();
    const stateUrl = schemaUrl(c.url, stateSchema);
    const target = new pg.Client({ connectionString: c.url });
    await target.connect();
    try {
      await target.query(`CREATE SCHEMA "${stateSchema}_data"`);
      await target.query(`SET search_path TO "${stateSchema}_data"`);
      const loader = await import(`data:text/javascript,${encodeURIComponent(LOADER)}`);
      await target.query(loader.TABLE_SQL);
      await target.query("CREATE TABLE sales_clean (LIKE sales_daily)");

      project = makeProject({
        "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ state: ${JSON.stringify(stateUrl)}, workerLeaseMs: 1500, schedulerLeaseMs: 1500, concurrency: 3 });
`,
        "lib/loader.mjs": LOADER,
        "pipelines/sales.ts": `
import pg from "pg";
import { pipeline, daily } from "idem";
import { replaceDay } from "../lib/loader.mjs";
const url = ${JSON.stringify(c.url)};
export const sales = pipeline("sales", { schedule: daily({ at: "00:00" }), start: "2026-07-01", end: "2026-07-${DAYS}", maxActiveRuns: 6 }, {
  load: {
    retries: 3, retryDelay: 0,
    run: async (ctx) => {
      const client = new pg.Client({ connectionString: url, options: "-c search_path=${stateSchema}_data" });
      await client.connect();
      try {
        await replaceDay(client, "sales_daily", ctx.businessDate);
      } finally {
        await client.end();
      }
      // After the write: a kill now leaves a day written by an attempt that never reported.
      await new Promise((r) => setTimeout(r, 300));
    },
  },
});
`,
      });
      const q = async <T = Record<string, any>>(sql: string, params: unknown[] = []): Promise<T[]> => {
        const client = new pg.Client({ connectionString: c.url, options: `-c search_path=${stateSchema}` });
        await client.connect();
        try {
          return (await client.query(sql, params)).rows as T[];
        } catch (error) {
          if ((error as { code?: string }).code === "42P01") return [];
          throw error;
        } finally {
          await client.end();
        }
      };
      const succeeded = async () => (await q<{ n: number }>("SELECT count(*)::int AS n FROM runs WHERE state = 'success'"))[0]?.n ?? 0;

      const survivor = c.start("h1", project, "worker");
      const doomed = c.start("h2", project, "worker");
      procs.push(survivor, doomed);
      await waitFor("both workers to register", async () => (await q("SELECT 1 FROM workers")).length === 2 || undefined, 30_000);
      procs.push(c.start("h1", project, "scheduler"));
      await waitFor("the h2 worker to be in the middle of a day, with days done", async () =>
        ((await succeeded()) >= 6 && (await q("SELECT 1 FROM attempts WHERE state = 'running' AND pid = $1", [doomed.child.pid])).length > 0) || undefined, 60_000);
      const doomedPid = doomed.child.pid;
      await doomed.kill9();
      await waitFor(`all ${DAYS} days to succeed`, async () => (await succeeded()) === DAYS || undefined, 90_000);

      const perDay = await q<{ business_date: string; n: number }>("SELECT business_date, count(*)::int AS n FROM runs GROUP BY business_date");
      expect(perDay).toHaveLength(DAYS);
      expect(perDay.filter((d) => d.n !== 1)).toEqual([]);
      const lost = await q<{ run_id: string; task_id: string; try_number: number }>(
        "SELECT run_id, task_id, try_number FROM attempts WHERE state = 'lost' AND pid = $1", [doomedPid]);
      expect(lost.length).toBeGreaterThan(0);
      for (const a of lost) {
        const after = await q<{ pid: number; try_number: number }>(
          "SELECT pid, try_number FROM attempts WHERE run_id = $1 AND task_id = $2 AND state = 'success'", [a.run_id, a.task_id]);
        expect(after).toEqual([{ pid: survivor.child.pid, try_number: a.try_number + 1 }]);
      }
      expect(await q("SELECT 1 FROM attempts WHERE state = 'success' GROUP BY run_id, task_id HAVING count(*) > 1")).toEqual([]);

      for (let d = 1; d <= DAYS; d++) await loader.replaceDay(target, "sales_clean", `2026-07-${String(d).padStart(2, "0")}`);
      const difference = await target.query(
        "(SELECT * FROM sales_daily EXCEPT ALL SELECT * FROM sales_clean) UNION ALL (SELECT * FROM sales_clean EXCEPT ALL SELECT * FROM sales_daily)");
      expect(difference.rows).toEqual([]);
      expect((await target.query("SELECT count(*)::int AS n FROM sales_daily")).rows[0].n).toBe(DAYS * 5);
      console.info(`netns cluster (${c.mode}): ${lost.length} attempt(s) of the killed worker retried on the other host`);
    } finally {
      await target.query(`DROP SCHEMA IF EXISTS "${stateSchema}_data" CASCADE`).catch(() => {});
      await target.end();
    }
  }, 180_000);
});
