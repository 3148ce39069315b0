/**
 * A run keeps its code across machines: PostgreSQL on host db, machine A on h1 (the scheduler and
 * a worker), machine B on h2 (a worker), in network namespaces (netns-support.ts). Each machine
 * has a project directory of its own, seen by its processes at one path (as a deployment keeps
 * it), with the other machine's hidden; they share only PostgreSQL and the bundle directory that
 * idem.config.ts names. B's files are the new version from the start: it must finish A's
 * half-done run on the old code, from the shared bundles alone.
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeProject, repo, waitFor, type Daemon } from "../support/processes.ts";
import { openCluster, type Cluster, type ProjectView } from "./netns-support.ts";
import { dropSchema, freshSchema, queryPg, schemaUrl, testPostgresUrl } from "./postgres-support.ts";

const testUrl = testPostgresUrl();

const versionModule = (code: string) => `export const CODE = "${code}";\n`;

/** Each task returns the version of the code it ran; `hold` waits for the file `go` beside the project's files. */
const PIPELINE = (comment: string) => `// ${comment}
import { existsSync } from "node:fs";
import { pipeline } from "idem";
import { CODE } from "../lib/version.ts";
const here = new URL("..", import.meta.url).pathname;
export const pinned = pipeline("pinned", {}, {
  first: { run: () => ({ code: CODE }) },
  hold: { after: ["first"], retries: 2, retryDelay: 0, run: async () => {
    while (!existsSync(here + "go")) await new Promise((r) => setTimeout(r, 50));
    return { code: CODE };
  } },
  after: { after: ["hold"], run: () => ({ code: CODE }) },
  last: { after: ["after"], run: () => ({ code: CODE }) },
});
`;

interface AttemptRow { task_id: string; state: string; pid: number; summary: string | null }

let cluster: Cluster | null = null;
let schema: string | null = null;
let base: string | null = null;
const daemons: Daemon[] = [];

describe.skipIf(!testUrl)("a run keeps its code on two machines (PostgreSQL, network namespaces)", () => {
  beforeAll(() => {
    cluster = openCluster(testUrl!, "code versions across machines");
  }, 90_000);

  afterAll(async () => {
    await Promise.all(daemons.splice(0).map((d) => d.stop()));
    if (base) removeProject(base);
    if (cluster?.mode === "loopback" && schema) await dropSchema(testUrl!, schema).catch(() => {});
    cluster?.tearDown();
  }, 60_000);

  it("machine B, whose files are the new version, finishes machine A's half-done run on the old code from the shared bundles after A's worker is killed with -9; a new run and a rerun on the latest code run the new code", async () => {
    const c = cluster!;
    schema = freshSchema();
    mkdirSync(join(repo, ".tmp"), { recursive: true });
    base = mkdtempSync(join(repo, ".tmp", "netns-versions-"));
    const shared = join(base, "bundles");
    const seenAt = join(base, "project");
    const [dirA, dirB] = [join(base, "a"), join(base, "b")];
    const config = `import { defineConfig } from "idem";
export default defineConfig({ state: ${JSON.stringify(schemaUrl(c.url, schema))}, bundles: ${JSON.stringify(shared)}, workerLeaseMs: 1500, schedulerLeaseMs: 1500, reloadMs: 200 });
`;
    const write = (dir: string, files: Record<string, string>) => {
      for (const [name, text] of Object.entries(files)) {
        mkdirSync(join(dir, name, ".."), { recursive: true });
        writeFileSync(join(dir, name), text);
      }
    };
    mkdirSync(seenAt);
    mkdirSync(shared);
    write(dirA, { "idem.config.ts": config, "lib/version.ts": versionModule("v1"), "pipelines/pinned.ts": PIPELINE("first deploy") });
    write(dirB, { "idem.config.ts": config, "lib/version.ts": versionModule("v2"), "pipelines/pinned.ts": PIPELINE("second deploy") });
    const machineA: ProjectView = { dir: dirA, seenAt, hidden: [dirB] };
    const machineB: ProjectView = { dir: dirB, seenAt, hidden: [dirA] };
    const start = (host: "h1" | "h2", machine: ProjectView, ...args: string[]) => {
      const daemon = c.start(host, machine, ...args);
      daemons.push(daemon);
      return daemon;
    };
    const cli = (host: "h1" | "h2", machine: ProjectView, ...args: string[]) => {
      const result = c.cli(host, machine, ...args);
      expect(result.status, `idem ${args.join(" ")}: ${result.stderr}${result.error?.message ?? ""}`).toBe(0);
      return result.stdout;
    };
    const q = <T>(sql: string, params: unknown[] = []) => queryPg<T>(c.url, schema!, sql, params);
    const attempts = (runId: string) =>
      q<AttemptRow>("SELECT task_id, state, pid, summary::text AS summary FROM attempts WHERE run_id = $1 ORDER BY attempt_id", [runId]);
    const codeRan = (rows: AttemptRow[]) => rows.filter((a) => a.state === "success").map((a) => `${a.task_id}:${JSON.parse(a.summary!).code}`);
    const runEnded = (runId: string) => waitFor(`run ${runId} to end`, async () => {
      const [run] = await q<{ state: string }>("SELECT state FROM runs WHERE run_id = $1", [runId]);
      return run && (run.state === "success" || run.state === "failed") ? run.state : undefined;
    }, 60_000);
    const codeVersionOf = async (runId: string) => (await q<{ code_version: string }>("SELECT code_version FROM runs WHERE run_id = $1", [runId]))[0]?.code_version;

    start("h1", machineA, "scheduler");
    const doomed = start("h1", machineA, "worker");
    cli("h1", machineA, "trigger", "pinned", "--date", "2026-09-01", "--reason", "old code");
    await waitFor("hold to be running on machine A", async () => (await attempts("pinned@2026-09-01")).find((a) => a.task_id === "hold" && a.state === "running"), 60_000);
    const oldVersion = (await codeVersionOf("pinned@2026-09-01"))!;
    expect(oldVersion).toMatch(/^[0-9a-f]{20}$/);
    expect(existsSync(join(shared, `${oldVersion}.mjs`))).toBe(true);

    const survivor = start("h2", machineB, "worker");
    await waitFor("both workers to register", async () => (await q("SELECT 1 FROM workers")).length === 2 || undefined, 30_000);
    // The deploy reaches machine A while the run is half done; then A's worker dies.
    write(dirA, { "lib/version.ts": versionModule("v2"), "pipelines/pinned.ts": PIPELINE("second deploy") });
    await waitFor("machine A's worker to load the new file", () => (/pipeline files reloaded/.test(doomed.output()) ? true : undefined));
    await doomed.kill9();
    for (const dir of [dirA, dirB]) writeFileSync(join(dir, "go"), "");

    expect(await runEnded("pinned@2026-09-01")).toBe("success");
    const old = await attempts("pinned@2026-09-01");
    expect(old.filter((a) => a.task_id === "hold").map((a) => a.state)).toEqual(["lost", "success"]);
    expect(codeRan(old)).toEqual(["first:v1", "hold:v1", "after:v1", "last:v1"]);
    // Everything after the kill ran on machine B, from its own copy of the shared bundle.
    expect(old.filter((a) => a.state === "success").slice(1).map((a) => a.pid)).toEqual([survivor.child.pid, survivor.child.pid, survivor.child.pid]);
    expect(existsSync(join(dirB, ".idem", "cache", "bundles", `${oldVersion}.mjs`))).toBe(true);

    // A new run, created on machine B, runs the new code.
    cli("h2", machineB, "trigger", "pinned", "--date", "2026-09-02", "--reason", "new code");
    expect(await runEnded("pinned@2026-09-02")).toBe("success");
    expect(codeRan(await attempts("pinned@2026-09-02"))).toEqual(["first:v2", "hold:v2", "after:v2", "last:v2"]);
    const newVersion = (await codeVersionOf("pinned@2026-09-02"))!;
    expect(newVersion).toMatch(/^[0-9a-f]{20}$/);
    expect(newVersion).not.toBe(oldVersion);

    // A rerun of the old day on the latest code, on machine B, runs the new code and moves the run to it.
    cli("h2", machineB, "run", "pinned", "--date", "2026-09-01", "--code", "latest", "--reason", "again, new code");
    expect(codeRan(await attempts("pinned@2026-09-01")).slice(4)).toEqual(["first:v2", "hold:v2", "after:v2", "last:v2"]);
    expect(await codeVersionOf("pinned@2026-09-01")).toBe(newVersion);
    const audit = await q<{ details: { code: unknown } }>("SELECT details FROM audit_log WHERE run_id = 'pinned@2026-09-01' AND action = 'rerun'");
    expect(audit.map((a) => a.details.code)).toEqual([{ choice: "latest", from: oldVersion, to: newVersion }]);

    const indexed = await q<{ code_version: string; location: string }>("SELECT code_version, location FROM code_versions ORDER BY created_at");
    expect(indexed).toEqual([{ code_version: oldVersion, location: shared }, { code_version: newVersion, location: shared }]);
    console.info(`code versions across machines (${c.mode}): ${oldVersion} finished on machine B after machine A's worker was killed; ${newVersion} for the new run and the rerun`);
  }, 180_000);
});
