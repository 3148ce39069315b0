import { afterEach, describe, expect, it } from "vitest";
import { makeProject, removeProject, startIdemWith, waitFor, type Daemon } from "../support/processes.ts";

let project: string | null = null;
const daemons: Daemon[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
  if (project) removeProject(project);
  project = null;
});

const TOKEN = "tok_log_5ecret_77aa";

/** A day that fails with the secret in its error, and a day that succeeds. */
function leakyProject(): string {
  return makeProject({
    "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ secrets: ["API_TOKEN"] });
`,
    "pipelines/leaky.ts": `import { pipeline, daily } from "idem";
// Printed by every process that imports the file: the daemon's own import is outside any attempt.
console.log("leaky.ts imported");
export const leaky = pipeline("leaky", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-02" }, {
  call: { run: (ctx) => {
    if (ctx.businessDate === "2026-09-01") throw new Error("refused token " + process.env.API_TOKEN);
    return { ok: 1 };
  } },
});
`,
  });
}

type Line = Record<string, unknown>;

function jsonLines(output: string): Line[] {
  return output.split("\n").filter((l) => l.trim() !== "").map((l) => {
    try {
      return JSON.parse(l) as Line;
    } catch {
      throw new Error(`not a JSON line: ${l}`);
    }
  });
}

function start(...flags: string[]): Daemon {
  const dev = startIdemWith(project!, { API_TOKEN: TOKEN }, "dev", "--no-serve", ...flags);
  daemons.push(dev);
  return dev;
}

describe("--log-format json and --log-level", () => {
  it("writes one JSON object a line: level, time, role, id, the event and the fields that locate it; secrets masked", async () => {
    project = leakyProject();
    const dev = start("--log-format", "json");
    await waitFor("both attempts' lines", () => (jsonLines(dev.output()).filter((l) => l.event === "attempt:finished").length >= 2 ? true : undefined), 60_000);
    const lines = jsonLines(dev.output());
    expect(dev.output()).not.toContain(TOKEN);
    for (const line of lines) {
      expect(line).toMatchObject({ level: expect.stringMatching(/^(debug|info|warn|error)$/), role: "dev", id: expect.any(String), pid: dev.child.pid });
      expect(new Date(line.time as string).toISOString()).toBe(line.time);
      expect(typeof line.msg).toBe("string");
    }
    const failed = lines.find((l) => l.event === "attempt:finished" && l.businessDate === "2026-09-01")!;
    expect(failed).toMatchObject({
      level: "warn", pipeline: "leaky", run: expect.stringMatching(/^leaky@/), task: "call", try: 1, businessDate: "2026-09-01", worker: failed.id,
    });
    expect(failed.msg).toMatch(/^leaky@\S+ call try 1: failed: .*refused token \*\*\*$/);
    const succeeded = lines.find((l) => l.event === "attempt:finished" && l.businessDate === "2026-09-02")!;
    expect(succeeded).toMatchObject({ level: "info", task: "call", try: 1 });
    expect(lines.find((l) => l.event === "run:created")).toMatchObject({ level: "info", pipeline: "leaky", businessDate: expect.any(String), run: expect.any(String) });
    expect(lines.find((l) => l.event === "lease:won" && (l.msg as string).startsWith("scheduler "))).toMatchObject({ level: "info", holder: expect.any(String) });
    // No debug line at the default level.
    expect(lines.filter((l) => l.level === "debug")).toEqual([]);
    // What the process prints itself while it imports the pipeline file is a line of the log too.
    expect(lines.find((l) => l.event === "stdout")).toMatchObject({ level: "info", msg: "leaky.ts imported" });
  });

  it("--log-level warn writes warnings only: the failed attempt, not the runs created nor the success", async () => {
    project = leakyProject();
    const dev = start("--log-format", "json", "--log-level", "warn");
    await waitFor("the failed attempt's line", () => jsonLines(dev.output()).find((l) => l.event === "attempt:finished"), 60_000);
    // The success of the other day is recorded too, and not written.
    await waitFor("the second day to succeed", async () => {
      const { queryState } = await import("../support/processes.ts");
      return queryState<{ n: number }>(project!, "SELECT count(*) AS n FROM runs WHERE state = 'success'")[0]!.n === 1 ? true : undefined;
    }, 60_000);
    const lines = jsonLines(dev.output());
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.filter((l) => l.level !== "warn" && l.level !== "error")).toEqual([]);
    expect(lines.filter((l) => l.event === "attempt:finished").map((l) => l.businessDate)).toEqual(["2026-09-01"]);
  });

  it("refuses a format or level it does not know: one line naming the flag, exit 2", async () => {
    project = leakyProject();
    const { spawnSync } = await import("node:child_process");
    const { join } = await import("node:path");
    const { repo } = await import("../support/processes.ts");
    const bad = spawnSync(process.execPath, [join(repo, "bin/idem.js"), "worker", "--log-format", "xml"], { cwd: project, encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--log-format <format>' argument 'xml' is invalid\. Allowed choices are pretty, json\./);
  });
});
