import { closeSync, openSync, readFileSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { spawn, spawnSync } from "node:child_process";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { makeProject, queryState, removeProject, repo } from "../support/processes.ts";

let project: string;
afterEach(() => {
  if (project) removeProject(project);
});

const bin = join(repo, "bin/idem.js");
const cli = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { cwd: project, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });

/** Runs `idem <args>`, reading its stdout as a pipe; returns the bytes and the peak resident memory it reached. */
async function measured(args: string[], options: { readAfterMs?: number } = {}): Promise<{ stdout: Buffer; code: number | null; peakRssKb: number }> {
  const child = spawn(process.execPath, [bin, ...args], { cwd: project, stdio: ["ignore", "pipe", "inherit"] });
  const chunks: Buffer[] = [];
  let peakRssKb = 0;
  const sample = setInterval(() => {
    try {
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"));
      if (hwm) peakRssKb = Math.max(peakRssKb, Number(hwm[1]));
    } catch {
      // gone already
    }
  }, 10);
  // A slow reader: nothing is read for a while, so the pipe fills and the writer must wait.
  child.stdout!.pause();
  setTimeout(() => child.stdout!.resume(), options.readAfterMs ?? 0);
  child.stdout!.on("data", (d: Buffer) => chunks.push(d));
  const code = await new Promise<number | null>((r) => child.once("close", (c) => r(c)));
  clearInterval(sample);
  return { stdout: Buffer.concat(chunks), code, peakRssKb };
}

describe("bounded logs and whole output", () => {
  it("caps a 1 GB attempt log to its head and tail, and streams `idem logs --tail 100` in constant memory", async () => {
    project = makeProject({
      "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({ logMaxBytes: 1048576 });\n`,
      "pipelines/loud.ts": `
import { pipeline, daily } from "idem";
export const loud = pipeline("loud", { schedule: daily({ at: "00:00" }), start: "2026-09-01" }, {
  // 1 GiB of 64-byte lines, as fast as a pipe goes.
  shout: { command: ["bash", "-c", "echo FIRST LINE; yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx | head -c 1073741824; echo LAST LINE"] },
});
`,
    });
    const run = cli("run", "loud", "--date", "2026-09-01");
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    const [attempt] = queryState<{ log_path: string }>(project, "SELECT log_path FROM attempts");
    const size = statSync(attempt!.log_path).size;
    expect(size).toBeGreaterThan(1_000_000);
    expect(size).toBeLessThan(1_100_000);
    const log = readFileSync(attempt!.log_path, "utf8");
    expect(log.startsWith("FIRST LINE\nxxx")).toBe(true);
    expect(log.slice(-30)).toMatch(/x\nLAST LINE\n$/);
    expect(log).toMatch(/\[idem: \d+ bytes dropped here; this log keeps the first 524288 and the last 524288 of 10\d{8} bytes \(logMaxBytes\)\]/);

    const tail = await measured(["logs", "loud@2026-09-01", "shout", "--tail", "100"]);
    expect(tail.code).toBe(0);
    expect(tail.stdout.toString().split("\n").filter((l, i, all) => i < all.length - 1 || l)).toHaveLength(100);
    expect(tail.stdout.toString().trimEnd().endsWith("LAST LINE")).toBe(true);

    // A log written before any cap (or by hand), 400 MB: streamed whole, and tailed, in bounded memory.
    const fd = openSync(attempt!.log_path, "w");
    const block = Buffer.from(("y".repeat(99) + "\n").repeat(10_000));
    for (let i = 0; i < 400; i++) writeSync(fd, block);
    writeSync(fd, "the end\n");
    closeSync(fd);
    const whole = await measured(["logs", "loud@2026-09-01", "shout"]);
    expect(whole.stdout.length).toBe(400 * block.length + 8);
    const tailed = await measured(["logs", "loud@2026-09-01", "shout", "--tail", "100"]);
    expect(tailed.stdout.toString().split("\n")).toHaveLength(101);
    expect(whole.peakRssKb).toBeLessThan(200 * 1024);
    expect(tailed.peakRssKb).toBeLessThan(200 * 1024);
  });

  it("delivers 5 MB of JSON whole to a slow reader through a pipe", async () => {
    project = makeProject({
      "idem.config.ts": `export default {};\n`,
      "pipelines/daily.ts": `
import { pipeline, daily } from "idem";
export const d = pipeline("shop_orders", { schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2026-09-01" }, { a: { run: () => {} } });
`,
    });
    const { stdout, code } = await measured(["next", "shop_orders", "-n", "25000", "--json"], { readAfterMs: 1_000 });
    expect(code).toBe(0);
    expect(stdout.length).toBeGreaterThan(5_000_000);
    expect(JSON.parse(stdout.toString())).toHaveLength(25_000);
  });

  it("exits 3, naming the state file, when another process holds it locked past stateBusyTimeoutMs", () => {
    project = makeProject({
      "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({ stateBusyTimeoutMs: 300 });\n`,
      "pipelines/p.ts": `
import { pipeline, daily } from "idem";
export const p = pipeline("p", { schedule: daily({ at: "00:00" }), start: "2026-09-01" }, { a: { run: () => {} } });
`,
    });
    expect(cli("runs", "p").status).toBe(0);
    const holder = new Database(join(project, ".idem", "state.db"));
    try {
      holder.exec("BEGIN IMMEDIATE");
      const paused = cli("pause", "p", "--note", "maintenance");
      expect(paused.status).toBe(3);
      expect(paused.stderr.trim()).toBe(
        `idem: the state file ${join(project, ".idem", "state.db")} is locked by another process (waited 300 ms; stateBusyTimeoutMs in idem.config.ts sets how long)`,
      );
    } finally {
      holder.exec("ROLLBACK");
      holder.close();
    }
    expect(cli("pause", "p", "--note", "maintenance").status).toBe(0);
  });
});
