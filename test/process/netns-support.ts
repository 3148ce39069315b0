/**
 * Hosts built from network namespaces on one machine, for the tests across machines: PostgreSQL
 * runs on host "db" (a throwaway server of its own, listening only on db's address), idem
 * processes on h1 and h2, joined by a bridge (veth pairs, iproute2). Where namespaces cannot be
 * made (no privilege, no server binaries), the hosts are processes on loopback against the test
 * server, and the test says so (IDEM_TEST_NO_NETNS=1 asks for that on purpose); under CI=true
 * that is a failure instead, unless asked for, so CI never passes a proof across machines that it
 * did not make.
 */
import { execFileSync, spawnSync, type SpawnSyncReturns } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, chownSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { repo, startProcess, type Daemon } from "../support/processes.ts";

export type Host = "h1" | "h2";

/**
 * A project directory as a host sees it. A plain path is seen where it is. With `seenAt`, the
 * host's processes see `dir` at that path (a bind mount in their own mount namespace), as every
 * machine of a deployment keeps its own copy of the project at one path; `hidden` directories
 * are covered with an empty file system, as another machine's files are out of reach. Loopback
 * hosts cannot do either: they see `dir` where it is, and everything else.
 */
export type ProjectView = string | { dir: string; seenAt: string; hidden: string[] };

export interface Cluster {
  /** How the hosts (and this test) reach PostgreSQL. */
  url: string;
  mode: "namespaces" | "loopback";
  /** Starts `idem <args>` on a host, in the project as the host sees it. */
  start(host: Host, project: ProjectView, ...args: string[]): Daemon;
  /** Runs `idem <args>` on a host to its end (at most a minute). */
  cli(host: Host, project: ProjectView, ...args: string[]): SpawnSyncReturns<string>;
  /** Stops the server on db and removes the namespaces (nothing on loopback). */
  tearDown(): void;
}

const pgBin = (() => {
  try {
    return execFileSync("sh", ["-c", "ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1"], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
})();

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"], timeout: 30_000, encoding: "utf8" });
const quietly = (fn: () => unknown) => {
  try {
    fn();
  } catch {
    // cleaning up what may not exist
  }
};
const idem = join(repo, "bin/idem.js");
// The config names the state; a variable from the test's own environment must not win over it.
const env = () => ({ ...process.env, IDEM_STATE_URL: "" });
const shellQuoted = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** db, h1 and h2 as namespaces when they can be made, else processes on loopback against `testUrl`. */
export function openCluster(testUrl: string, name: string): Cluster {
  try {
    const cluster = buildNamespaces();
    console.info(`${name}: hosts db (PostgreSQL), h1 and h2 in network namespaces, reached at ${cluster.url}`);
    return cluster;
  } catch (error) {
    const why = (error as Error).message.split("\n")[0];
    if (process.env.CI === "true" && process.env.IDEM_TEST_NO_NETNS !== "1") {
      throw new Error(`${name}: CI=true, and network namespaces cannot be used here: ${why}`);
    }
    console.warn(`${name}: network namespaces cannot be used here (${why}); running the same scenario with processes on loopback against the test server`);
    const dirOf = (project: ProjectView) => (typeof project === "string" ? project : project.dir);
    return {
      url: testUrl,
      mode: "loopback",
      start: (_host, project, ...args) => startProcess([process.execPath, idem, ...args], { cwd: dirOf(project), env: env() }),
      cli: (_host, project, ...args) => spawnSync(process.execPath, [idem, ...args], { cwd: dirOf(project), env: env(), encoding: "utf8", timeout: 60_000 }),
      tearDown: () => {},
    };
  }
}

/** Builds db, h1 and h2, and starts PostgreSQL on db. Throws (after undoing its work) if it cannot. */
function buildNamespaces(): Cluster {
  if (process.env.IDEM_TEST_NO_NETNS === "1") throw new Error("IDEM_TEST_NO_NETNS=1");
  if (!pgBin) throw new Error("no PostgreSQL server binaries to start a server on host db");
  const tag = randomBytes(2).toString("hex");
  const subnet = `10.${200 + (parseInt(tag, 16) % 50)}.${parseInt(tag, 16) % 250}`;
  const hosts = { db: `idem-db-${tag}`, h1: `idem-h1-${tag}`, h2: `idem-h2-${tag}` };
  const address = { db: `${subnet}.1`, h1: `${subnet}.2`, h2: `${subnet}.3`, here: `${subnet}.254` };
  const bridge = `idbr${tag}`;
  const pgDir = `/tmp/idem-netns-${tag}`;

  const tearDown = () => {
    if (existsSync(`${pgDir}/data`)) {
      quietly(() => run("ip", ["netns", "exec", hosts.db, "runuser", "-u", "postgres", "--", `${pgBin}/pg_ctl`, "-D", `${pgDir}/data`, "-m", "immediate", "stop"]));
    }
    for (const ns of Object.values(hosts)) quietly(() => run("ip", ["netns", "del", ns]));
    for (const host of Object.keys(hosts)) quietly(() => run("ip", ["link", "del", `idv${tag}${host}`]));
    quietly(() => run("ip", ["link", "del", bridge]));
    rmSync(pgDir, { recursive: true, force: true });
  };

  try {
    run("ip", ["link", "add", bridge, "type", "bridge"]);
    run("ip", ["link", "set", bridge, "up"]);
    run("ip", ["addr", "add", `${address.here}/24`, "dev", bridge]);
    for (const [host, ns] of Object.entries(hosts) as [keyof typeof hosts, string][]) {
      const outside = `idv${tag}${host}`;
      const inside = `idp${tag}${host}`;
      run("ip", ["netns", "add", ns]);
      run("ip", ["link", "add", outside, "type", "veth", "peer", "name", inside]);
      run("ip", ["link", "set", inside, "netns", ns]);
      run("ip", ["netns", "exec", ns, "ip", "link", "set", inside, "name", "eth0"]);
      run("ip", ["netns", "exec", ns, "ip", "addr", "add", `${address[host]}/24`, "dev", "eth0"]);
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
    tearDown();
    throw error;
  }

  // `ip netns exec` gives the command a mount namespace of its own (slave to the machine's), so
  // the mounts that make a host's view of the files are the host's alone and end with it; `exec`
  // keeps the pid, so a kill -9 of the child is a kill -9 of idem.
  const onHost = (host: Host, project: ProjectView, args: string[]) => {
    const command = [process.execPath, idem, ...args].map(shellQuoted).join(" ");
    if (typeof project === "string") return { argv: ["ip", "netns", "exec", hosts[host], "sh", "-c", `exec ${command}`], cwd: project };
    const script = [
      `mount --bind ${shellQuoted(project.dir)} ${shellQuoted(project.seenAt)}`,
      ...project.hidden.map((dir) => `mount -t tmpfs idem-hidden ${shellQuoted(dir)}`),
      `cd ${shellQuoted(project.seenAt)}`,
      `exec ${command}`,
    ].join(" && ");
    return { argv: ["ip", "netns", "exec", hosts[host], "sh", "-c", script], cwd: project.dir };
  };
  return {
    url: `postgres://idem@${address.db}:5432/idem`,
    mode: "namespaces",
    start: (host, project, ...args) => {
      const { argv, cwd } = onHost(host, project, args);
      return startProcess(argv, { cwd, env: env() });
    },
    cli: (host, project, ...args) => {
      const { argv, cwd } = onHost(host, project, args);
      return spawnSync(argv[0]!, argv.slice(1), { cwd, env: env(), encoding: "utf8", timeout: 60_000 });
    },
    tearDown,
  };
}
