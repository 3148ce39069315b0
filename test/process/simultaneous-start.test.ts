/**
 * A service manager (systemd, a container's entrypoint, docker compose) starts the scheduler and
 * the workers at the same moment, on a project whose state file does not exist yet. Every one
 * of them must come up, share the one file, and the work must run once.
 *
 * Left to chance, the processes rarely open the file in the same millisecond, so the second test
 * makes that moment last: the state file is held the way the first process to open it holds it
 * while switching it to WAL, until the first daemon has loaded its pipelines and opened the file
 * too. (Before the fix, a process meeting that moment died with "database is locked".)
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeProject, queryState, removeProject, startIdem, waitFor, type Daemon } from "../support/processes.ts";
import { holdWriteLock } from "../support/sqlite-lock.ts";

let project: string | null = null;
const daemons: Daemon[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
  if (project) removeProject(project);
  project = null;
});

const DAYS = 4;
const WORKERS = 3;

function freshProject(): string {
  project = makeProject({
    "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ workerLeaseMs: 3000, schedulerLeaseMs: 3000, concurrency: 2 });
`,
    "pipelines/days.ts": `
import { appendFileSync, writeFileSync } from "node:fs";
import { pipeline, daily } from "idem";
const here = new URL("..", import.meta.url).pathname;
// Loaded: this process opens the state file next.
writeFileSync(here + "loaded", String(process.pid));
export const days = pipeline("days", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-0${DAYS}", maxActiveRuns: ${DAYS} }, {
  extract: { run: (ctx) => { appendFileSync(here + "ran", ctx.businessDate + " extract\\n"); } },
  load: { after: ["extract"], run: (ctx) => { appendFileSync(here + "ran", ctx.businessDate + " load\\n"); } },
});
`,
  });
  return project;
}

function startAllAtOnce(dir: string): void {
  daemons.push(startIdem(dir, "scheduler"), ...Array.from({ length: WORKERS }, () => startIdem(dir, "worker")));
}

/** Every process stays up, each logs that it started, every run succeeds, and each task ran once. */
async function expectAllUpAndWorkDoneOnce(dir: string): Promise<void> {
  const exited = () => daemons.filter((d) => d.child.exitCode !== null || d.child.signalCode !== null);
  const outcome = await waitFor(`all ${DAYS} runs to succeed and every process to be up`, () => {
    if (exited().length > 0) return "a process exited";
    const up = daemons.filter((d) => /leads|worker .*: concurrency/.test(d.output())).length;
    const done = queryState(dir, "SELECT 1 FROM runs WHERE state = 'success'").length;
    return done === DAYS && up === daemons.length ? "all up, all done" : undefined;
  }, 45_000);
  expect(outcome, exited().map((d) => `${d.name} exited:\n${d.output()}`).join("\n")).toBe("all up, all done");
  const ran = readFileSync(join(dir, "ran"), "utf8").trim().split("\n").sort();
  const expected = Array.from({ length: DAYS }, (_, i) => `2026-09-0${i + 1}`).flatMap((d) => [`${d} extract`, `${d} load`]);
  expect(ran).toEqual(expected.sort());
}

describe("starting the scheduler and workers at the same moment on a fresh project", () => {
  it("every process comes up and each task runs once", async () => {
    const dir = freshProject();
    startAllAtOnce(dir);
    await expectAllUpAndWorkDoneOnce(dir);
  });

  it("a process that opens the state file while another is switching it to WAL waits, and comes up", async () => {
    const dir = freshProject();
    mkdirSync(join(dir, ".idem"));
    const stateFile = join(dir, ".idem", "state.db");
    // The holder lets go 1.5 s after the first daemon has loaded its pipelines: that one, at least,
    // opens the file while it is held.
    const holder = await holdWriteLock(stateFile, { holdMs: 1_500, after: join(dir, "loaded") });
    startAllAtOnce(dir);
    expect(await holder.released).toBe(0);
    await expectAllUpAndWorkDoneOnce(dir);
  });
});
