import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";

/** The programs a single-node cluster needs (Debian's slurm-wlm and munge). */
const PROGRAMS = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"];
const START_WITHIN_MS = 30_000;

/**
 * Whether the Slurm tests can run here: skipped with the reason printed when a program is
 * missing, except under CI=true, where a missing program is a failure (.ci/run installs them).
 */
export function slurmAvailable(): { ok: boolean; reason: string } {
  const missing = PROGRAMS.filter((p) => spawnSync("sh", ["-c", `command -v ${p}`], { env: { PATH: `${process.env.PATH}:/usr/sbin:/sbin` } }).status !== 0);
  if (missing.length === 0) return { ok: true, reason: "" };
  const reason = `${missing.join(", ")} not installed (apt-get install slurm-wlm munge)`;
  if (process.env.CI === "true") throw new Error(`Slurm tests cannot run under CI=true: ${reason}`);
  console.warn(`skipping Slurm tests: ${reason}`);
  return { ok: false, reason };
}

/** A single-node Slurm cluster on 127.0.0.1, its files in a temporary folder: munged, slurmctld and slurmd. */
export interface SlurmCluster {
  dir: string;
  /** What the Slurm tools need to find this cluster: `SLURM_CONF` (plus PATH with sbin). */
  env: Record<string, string>;
  /** Where jobs' output files go. */
  outputDir: string;
  /** The job-completion log's records (one per job that ended), as `Key=Value` maps (`JobId`, `Name`, `JobState`, ...). */
  completions(): Record<string, string>[];
  /** `scontrol show job`'s fields for one job. */
  job(jobId: string): Record<string, string>;
  stop(): Promise<void>;
}

/**
 * Starts munged, slurmctld and slurmd with a generated key and slurm.conf (auth over this
 * cluster's own munge socket, free ports, no cgroups, a job-completion log), and waits at most
 * 30 s for the node to be idle. Each daemon runs in the foreground as a child of this process and
 * is stopped by its pid.
 */
export async function startSlurmCluster(): Promise<SlurmCluster> {
  const dir = mkdtempSync(join(tmpdir(), "idem-slurm-"));
  for (const sub of ["state", "spool", "out"]) mkdirSync(join(dir, sub));
  writeFileSync(join(dir, "munge.key"), randomBytes(1024));
  chmodSync(join(dir, "munge.key"), 0o600);
  const [ctldPort, dPort] = [await freePort(), await freePort()];
  const conf = join(dir, "slurm.conf");
  writeFileSync(conf, [
    "ClusterName=idemtest",
    `SlurmctldHost=${hostname().split(".")[0]}(127.0.0.1)`,
    `SlurmctldPort=${ctldPort}`,
    `SlurmdPort=${dPort}`,
    "SlurmUser=root",
    "SlurmdUser=root",
    "AuthType=auth/munge",
    `AuthInfo=socket=${join(dir, "munge.socket")}`,
    "CredType=cred/munge",
    `StateSaveLocation=${join(dir, "state")}`,
    `SlurmdSpoolDir=${join(dir, "spool")}`,
    `SlurmctldPidFile=${join(dir, "slurmctld.pid")}`,
    `SlurmdPidFile=${join(dir, "slurmd.pid")}`,
    `SlurmctldLogFile=${join(dir, "slurmctld.log")}`,
    `SlurmdLogFile=${join(dir, "slurmd.log")}`,
    "ProctrackType=proctrack/linuxproc",
    "TaskPlugin=task/none",
    "JobAcctGatherType=jobacct_gather/none",
    "SchedulerType=sched/builtin",
    "SelectType=select/cons_tres",
    "SelectTypeParameters=CR_Core",
    "ReturnToService=2",
    "MpiDefault=none",
    "JobCompType=jobcomp/filetxt",
    `JobCompLoc=${join(dir, "jobcomp.log")}`,
    "MinJobAge=3600",
    "KillWait=2",
    "NodeName=idemnode NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN",
    // Jobs share the node's cores (up to 8 on each): the tests run their scenarios at once, and a
    // job that sleeps must not keep another test's job pending.
    "PartitionName=debug Nodes=idemnode Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8",
    "",
  ].join("\n"));
  const env = { ...process.env, PATH: `${process.env.PATH}:/usr/sbin:/sbin`, SLURM_CONF: conf } as Record<string, string>;
  const daemons: ChildProcess[] = [];
  const start = (argv: string[]) => {
    const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr!.on("data", (d) => (err += d));
    daemons.push(Object.assign(child, { errText: () => err }));
    return child;
  };
  const stop = async () => {
    // Jobs first: a job's slurmstepd outlives slurmd, so a job still running would outlive the test.
    if (daemons.length === 3) {
      const jobs = () => spawnSync("squeue", ["--noheader", "--format=%i"], { env, encoding: "utf8" }).stdout.trim().split("\n").filter(Boolean);
      const running = jobs();
      if (running.length > 0) spawnSync("scancel", running, { env });
      const deadline = Date.now() + 10_000;
      while (jobs().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    }
    for (const child of daemons.reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    start(["munged", "--foreground", `--key-file=${join(dir, "munge.key")}`, `--socket=${join(dir, "munge.socket")}`, `--pid-file=${join(dir, "munged.pid")}`,
      `--log-file=${join(dir, "munged.log")}`, `--seed-file=${join(dir, "munge.seed")}`, "--force"]);
    await until("munged's socket", () => existsSync(join(dir, "munge.socket")), daemons, dir);
    start(["slurmctld", "-D", "-i"]);
    start(["slurmd", "-D", "-N", "idemnode"]);
    await until("the node to be idle", () => spawnSync("sinfo", ["--noheader", "--format=%T"], { env, encoding: "utf8" }).stdout.trim() === "idle", daemons, dir);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    dir,
    env: { SLURM_CONF: conf, PATH: env.PATH! },
    outputDir: join(dir, "out"),
    completions: () =>
      existsSync(join(dir, "jobcomp.log"))
        ? readFileSync(join(dir, "jobcomp.log"), "utf8").trim().split("\n").filter(Boolean).map(fieldsOf)
        : [],
    job: (jobId) => fieldsOf(spawnSync("scontrol", ["show", "job", "--oneliner", jobId], { env, encoding: "utf8" }).stdout),
    stop,
  };
}

async function until(what: string, ready: () => boolean, daemons: ChildProcess[], dir: string): Promise<void> {
  const deadline = Date.now() + START_WITHIN_MS;
  while (!ready()) {
    const dead = daemons.find((d) => d.exitCode !== null || d.signalCode !== null);
    if (dead || Date.now() > deadline) {
      const logs = ["slurmctld.log", "slurmd.log", "munged.log"].filter((f) => existsSync(join(dir, f)))
        .map((f) => `${f}:\n${readFileSync(join(dir, f), "utf8").trim().split("\n").slice(-5).join("\n")}`).join("\n");
      const why = dead ? `${dead.spawnargs[0]} exited (${dead.exitCode ?? dead.signalCode}): ${(dead as ChildProcess & { errText(): string }).errText().trim()}` : `not within ${START_WITHIN_MS} ms`;
      throw new Error(`the Slurm cluster did not start: waiting for ${what}, ${why}\n${logs}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

function fieldsOf(line: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const part of line.trim().split(/\s+/)) {
    const eq = part.indexOf("=");
    if (eq > 0 && !(part.slice(0, eq) in fields)) fields[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return fields;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
