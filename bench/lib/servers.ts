/**
 * Servers a benchmark starts for itself and stops by pid: a PostgreSQL with fsync on (as users
 * run it, unlike the tests' throwaway server) and a Redis for BullMQ. Both bind 127.0.0.1 on a
 * free port and keep their files in a temporary folder that is removed afterwards.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, chownSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Server {
  url: string;
  pid: number;
  stop: () => Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stopPid(pid: number, signal: NodeJS.Signals, what: string): Promise<void> {
  if (!alive(pid)) return;
  process.kill(pid, signal);
  const deadline = Date.now() + 30_000;
  while (alive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, "SIGKILL");
      console.error(`# ${what} (pid ${pid}) did not stop within 30 s: killed`);
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

function pgBin(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).sort((a, b) => Number(a) - Number(b));
  return versions.length ? join(root, versions.at(-1)!, "bin") : null;
}

/** PostgreSQL with its durable defaults (fsync, synchronous_commit on), or null with a reason. */
export async function startPostgres(): Promise<Server | { skipped: string }> {
  const bin = pgBin();
  if (!bin) return { skipped: "no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)" };
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-pg-"));
  const root = process.getuid?.() === 0;
  // initdb refuses to run as root: the cluster belongs to the postgres user, as in .ci/postgres.sh.
  const asOwner = (file: string, args: string[]) => (root ? execFileSync("runuser", ["-u", "postgres", "--", file, ...args], { stdio: "ignore" }) : execFileSync(file, args, { stdio: "ignore" }));
  if (root) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    chownSync(dir, uid, gid);
  }
  const port = await freePort();
  asOwner(join(bin, "initdb"), ["-D", join(dir, "data"), "-U", "idem", "--auth=trust", "-E", "UTF8"]);
  asOwner(join(bin, "pg_ctl"), [
    "-D", join(dir, "data"), "-l", join(dir, "server.log"), "-w", "-t", "60",
    "-o", `-h 127.0.0.1 -p ${port} -k ${dir} -c fsync=on -c synchronous_commit=on -c max_connections=200`, "start",
  ]);
  const pid = Number(readFileSync(join(dir, "data", "postmaster.pid"), "utf8").split("\n")[0]);
  asOwner(join(bin, "createdb"), ["-h", "127.0.0.1", "-p", String(port), "-U", "idem", "bench"]);
  return {
    url: `postgres://idem@127.0.0.1:${port}/bench`,
    pid,
    stop: async () => {
      await stopPid(pid, "SIGINT", "PostgreSQL"); // SIGINT: PostgreSQL's fast shutdown
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Debian's redis-server with persistence off, or a reason to skip BullMQ. */
export async function startRedis(): Promise<Server | { skipped: string }> {
  const binary = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].find((b) => existsSync(b));
  if (!binary) return { skipped: "redis-server is not installed (apt-get install redis-server): BullMQ not measured" };
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-redis-"));
  const port = await freePort();
  const child = spawn(binary, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
  const deadline = Date.now() + 20_000;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.end();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline || child.exitCode !== null) {
      if (child.exitCode === null) child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
      return { skipped: `redis-server did not start on 127.0.0.1:${port}` };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid!,
    stop: async () => {
      await stopPid(child.pid!, "SIGTERM", "redis-server");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Peak resident memory (VmHWM) of a process, in MB, or null once it is gone. */
export function peakRssMb(pid: number): number | null {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmHWM:"));
    return line ? Math.round(Number(line.split(/\s+/)[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** CPU time (user + system) a live process has used, in ms (/proc/<pid>/stat counts 100ths of a second), or null once it is gone. */
export function cpuMsOf(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/** Every process below `pid` (a worker's supervising shells and their task hosts). */
export function descendantPids(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readdirSync(`/proc/${pid}/task`).flatMap((t) =>
      readFileSync(`/proc/${pid}/task/${t}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number));
  } catch {
    return [];
  }
  return children.flatMap((c) => [c, ...descendantPids(c)]);
}
