import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { repo } from "../support/processes.ts";

/**
 * A hang guard, not a speed test: the demo takes seconds (15 s on a loaded machine); one that
 * prints everything and then never exits (task hosts left alive kept it open once) is killed at
 * the guard and fails, well inside the test's own timeout.
 */
const HANG_GUARD_MS = 90_000;

let copy = "";
let demoGroup: number | null = null;
afterEach(() => {
  // Whatever ended the test, no demo outlives it.
  if (demoGroup !== null) killGroup(demoGroup);
  demoGroup = null;
  if (copy) rmSync(copy, { recursive: true, force: true });
  copy = "";
});

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // already gone
  }
}

/**
 * A copy of the repository as the demo sees it: the shop example copied (the demo writes its
 * state and warehouse there), the sources, scripts and dependencies linked. The repository stays clean.
 */
function demoCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), "idem-demo-"));
  for (const file of ["package.json", "tsconfig.json"]) cpSync(join(repo, file), join(dir, file));
  for (const linked of ["src", "bin", "node_modules"]) symlinkSync(join(repo, linked), join(dir, linked));
  cpSync(join(repo, "examples/shop"), join(dir, "examples/shop"), {
    recursive: true,
    filter: (source) => !/[/\\]\.idem([/\\]|$)/.test(source),
  });
  return dir;
}

/** `npm run demo` in `cwd`, in its own process group, killed whole if it outlives the guard. */
function npmRunDemo(cwd: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string; err: string; hung: boolean }> {
  const env = { ...process.env };
  // The shop's own state file, whatever store this test run uses.
  delete env.IDEM_STATE_URL;
  const child = spawn("npm", ["run", "demo"], { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  demoGroup = child.pid!;
  let hung = false;
  const guard = setTimeout(() => {
    hung = true;
    killGroup(child.pid!);
  }, HANG_GUARD_MS);
  return new Promise((resolve) =>
    child.once("close", (code, signal) => {
      clearTimeout(guard);
      demoGroup = null;
      resolve({ code, signal, out, err, hung });
    }),
  );
}

describe("npm run demo, as the README says", () => {
  it("prints the shop's runs, ends by itself and exits 0", async () => {
    copy = demoCopy();
    const demo = await npmRunDemo(copy);
    const said = `stdout:\n${demo.out}\nstderr:\n${demo.err}`;
    expect(demo.hung, `still running after ${HANG_GUARD_MS} ms\n${said}`).toBe(false);
    expect(demo.code, said).toBe(0);
    // The README's lines: a rerun replaces the day; the append doubles it and the check fails; a rerun repairs it.
    expect(demo.out).toContain("run 2026-09-01 loaded 3 rows, orders_daily has 8; run success\n");
    expect(demo.out).toContain("check_day failed: 2026-09-01: 6 rows for the file's 3 orders, 0 missing; run failed (append)");
    expect(demo.out).toContain("run 2026-09-01 loaded 3 rows, orders_daily has 8; run success (repaired)");
    expect(existsSync(join(copy, "examples/shop/.idem/state.db")), "the demo's state is in the copy").toBe(true);
  }, HANG_GUARD_MS + 30_000);
});
