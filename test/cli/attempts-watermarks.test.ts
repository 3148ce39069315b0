import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { makeProject, removeProject, repo } from "../support/processes.ts";

let project: string;

function idem(...args: string[]) {
  const result = spawnSync(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd: project, encoding: "utf8", env: { ...process.env, IDEM_USER: "tester" }, timeout: 60_000 });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

beforeAll(() => {
  project = makeProject({
    "idem.config.ts": `import type { IdemConfig } from "idem";\nexport default {} satisfies IdemConfig;\n`,
    "pipelines/orders.ts": `
import { pipeline, daily } from "idem";
export const orders = pipeline("orders", { schedule: daily({ at: "02:00" }), start: "2026-09-01" }, {
  load: {
    retries: 2, retryDelay: 300,
    run: async (ctx) => {
      if (ctx.tryNumber < 3) throw new Error("source not ready (try " + ctx.tryNumber + ")");
      await ctx.watermarks.save(ctx.pipelineId, ctx.taskId, 1000 + ctx.tryNumber);
      return { rows: 3 };
    },
  },
  publish: { after: ["load"], run: () => {} },
});
`,
  });
});
afterAll(() => removeProject(project));

describe("idem attempts", () => {
  it("shows every try with its times, the delay before it and its error", () => {
    expect(idem("run", "orders", "--date", "2026-09-01").code).toBe(0);
    const { code, out } = idem("attempts", "orders@2026-09-01", "load");
    expect(code).toBe(0);
    const lines = out.trim().split("\n");
    expect(lines[0]).toMatch(/^TRY\s+STATE\s+STARTED\s+ENDED\s+TOOK\s+DELAY BEFORE\s+WORKER\s+ERROR$/);
    expect(lines[1]).toMatch(/^1\s+failed\s+\S+Z\s+\S+Z\s+(\d+ms|\d+(\.\d)?s)\s+-\s+\S+\s+TaskFailed: source not ready \(try 1\)$/);
    expect(lines[2]).toMatch(/^2\s+failed\s+.*\s+(\d{3,}ms|\d+\.\ds)\s+\S+\s+TaskFailed: source not ready \(try 2\)$/);
    expect(lines[3]).toMatch(/^3\s+success\s/);
    const json = JSON.parse(idem("attempts", "orders@2026-09-01", "load", "--json").out) as { tryNumber: number; delayBeforeMs: number | null }[];
    expect(json.map((a) => a.tryNumber)).toEqual([1, 2, 3]);
    // the retry delay was 300 ms: no try started sooner than that after the one before it
    expect(json[0]!.delayBeforeMs).toBeNull();
    for (const a of json.slice(1)) expect(a.delayBeforeMs!).toBeGreaterThanOrEqual(300);
  });

  it("names the tasks of the run when asked for one it does not have", () => {
    const { code, err } = idem("attempts", "orders@2026-09-01", "lod");
    expect(code).toBe(2);
    expect(err).toBe(`idem: run orders@2026-09-01 has no task "lod" (tasks: load, publish)\n`);
  });
});

describe("idem watermarks", () => {
  it("lists what incremental loads saved, and sets one by hand with an audited reason", () => {
    // the run above was manual (`idem run`): only the schedule moves watermarks, so its save left none
    expect(idem("logs", "orders@2026-09-01", "load").out).toMatch(/watermark of orders\.load kept where it is \(not moved to 1003\): a manual run reads its own interval/);
    expect(idem("watermarks").out).toBe("no watermarks saved\n");
    expect(idem("watermarks", "set", "orders", "load", "1003", "--reason", "start the stream at 1003").code).toBe(0);
    expect(idem("watermarks").out).toMatch(/^PIPELINE\s+KEY\s+VALUE\s+UPDATED\norders\s+load\s+1003\s+\S+Z\n$/);
    const set = idem("watermarks", "set", "orders", "load", "900", "--reason", "reload September from 900");
    expect(set.code).toBe(0);
    expect(set.out).toBe("watermark orders load: 1003 -> 900\n");
    expect(JSON.parse(idem("watermarks", "orders", "--json").out)).toMatchObject([{ pipelineId: "orders", taskId: "load", value: 900 }]);
    expect(idem("audit").out).toMatch(/tester\s+watermark-set\s+orders\s+-\s+load\s+reload September from 900/);
  });

  it("refuses bad input: no reason, an unknown task, a number written as text, a live run that owns it", () => {
    expect(idem("watermarks", "set", "orders", "load", "5").err).toBe(`idem: give --reason "...": setting a watermark by hand is audited\n`);
    expect(idem("watermarks", "set", "orders", "lod", "5", "--reason", "x").err).toMatch(/^idem: pipeline orders has no task "lod": a watermark belongs to the task that loads incrementally \(tasks: load, publish\)\n$/);
    expect(idem("watermarks", "set", "orders", "load", "yesterday", "--reason", "x").err).toBe(`idem: watermark orders load is a number (900); "yesterday" is not one\n`);
    expect(idem("trigger", "orders", "--date", "2026-09-02").code).toBe(0);
    const refused = idem("watermarks", "set", "orders", "load", "1", "--reason", "x");
    expect(refused.code).toBe(2);
    expect(refused.err).toBe("idem: pipeline orders: run orders@2026-09-02 is live and has load still to finish, so it owns the watermark: set it once that run is done\n");
    expect(JSON.parse(idem("watermarks", "--json").out)[0].value).toBe(900);
  });
});
