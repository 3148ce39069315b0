import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { swapPartition, workspaceOf } from "../../src/data/index.ts";
import { rowsOfVersion } from "./fixtures/partition-versions.ts";

const fixture = resolve(import.meta.dirname, "fixtures/partition-reader.ts");
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const context = { runId: "p@2026-09-01", pipelineId: "p", taskId: "publish", tryNumber: 1 };
const DAYS = ["2026-09-01", "2026-09-02"];

function rowsFor(day: string, version: number) {
  return Array.from({ length: rowsOfVersion(version) }, (_, i) => ({ day, version, n: i }));
}

function startReader(root: string, stopFile: string, outFile: string) {
  const child = spawn(process.execPath, ["--import", "tsx", fixture], {
    env: { ...process.env, ROOT: root, STOP_FILE: stopFile, OUT_FILE: outFile, DEADLINE_MS: "200000" },
    stdio: ["ignore", "inherit", "inherit"],
  });
  return new Promise<{ reads: number; errors: number; mixes: number; messages: string[] }>((done, fail) => {
    child.once("exit", (code) => (code === 0 ? done(JSON.parse(readFileSync(outFile, "utf8"))) : fail(new Error(`reader exited with ${code}`))));
  });
}

describe("publishing file partitions for concurrent readers", () => {
  it("never gives a reader in another process an error or a mix while partitions are republished hundreds of times", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-readers-"));
    dirs.push(dir);
    const root = join(dir, "lake", "orders");
    for (const [w, day] of DAYS.entries()) await swapPartition({ root, column: "day", value: day, source: { rows: rowsFor(day, w) }, context });
    const stop = join(dir, "stop");
    const readers = [0, 1].map((i) => startReader(root, stop, join(dir, `reader-${i}.json`)));
    // Republish until both readers have done thousands of reads between them, bounded in time.
    // At a load of 14 on 2 cores, 90 s (the bound before) gave 257 republishes: the bound
    // leaves room for a loaded CI run. One writer per partition, as two runs for
    // two days would be.
    const until = Date.now() + 160_000;
    let republished = 0;
    const readsSoFar = () => [0, 1].reduce((n, i) => n + Number(existsOr(join(dir, `reader-${i}.json.progress`), "0")), 0);
    await Promise.all(DAYS.map(async (day, w) => {
      for (let v = 1 + w; (republished < 300 || readsSoFar() < 2000) && Date.now() < until; v += 2) {
        await swapPartition({ root, column: "day", value: day, source: { rows: rowsFor(day, v) }, context, versionGraceMs: 120_000, keepVersions: 2 });
        republished++;
      }
    }));
    writeFileSync(stop, "");
    const seen = await Promise.all(readers);
    const total = seen.reduce((n, s) => n + s.reads, 0);
    expect({ errors: seen.map((s) => s.errors), mixes: seen.map((s) => s.mixes), messages: seen.flatMap((s) => s.messages) }).toEqual({ errors: [0, 0], mixes: [0, 0], messages: [] });
    console.log(`partition readers: ${total} reads during ${republished} republishes`);
    expect(republished).toBeGreaterThanOrEqual(300);
    expect(total).toBeGreaterThanOrEqual(2000);
    // Versions replaced within the grace are all still there for readers that resolved them.
    expect(readdirSync(join(workspaceOf(root), "versions", "day=2026-09-01")).length).toBeGreaterThan(republished / 2 - 2);
  }, 240_000);
});

function existsOr(file: string, fallback: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return fallback;
  }
}
