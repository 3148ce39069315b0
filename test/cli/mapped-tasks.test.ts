import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { makeProject, removeProject, repo } from "../support/processes.ts";

let project: string;

function idem(...args: string[]) {
  const result = spawnSync(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd: project, encoding: "utf8", env: { ...process.env, IDEM_USER: "tester" }, timeout: 120_000 });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

beforeAll(() => {
  project = makeProject({
    "idem.config.ts": `import type { IdemConfig } from "idem";\nexport default {} satisfies IdemConfig;\n`,
    "pipelines/files.ts": `
import { mkdirSync, writeFileSync } from "node:fs";
import { pipeline, manual } from "idem";

export const files = pipeline("files", { schedule: manual(), start: "2026-09-01" }, {
  list: { run: (ctx) => ({ files: ctx.businessDate === "2026-09-02" ? ["a.csv", "b.csv", "a.csv"] : ["a.csv", "b.csv", "sub/c.csv"] }) },
  load: {
    after: ["list"],
    map: { items: { task: "list", field: "files" }, maxActive: 2 },
    run: (ctx) => {
      mkdirSync("out", { recursive: true });
      writeFileSync("out/" + encodeURIComponent(ctx.mapKey!), ctx.taskId + " " + ctx.businessDate + " " + JSON.stringify(ctx.item));
      ctx.log.info("loaded " + ctx.mapKey);
      return { rows: 1 };
    },
  },
  report: {
    after: ["load"],
    run: async (ctx) => {
      mkdirSync("out", { recursive: true });
      const page = await ctx.mapped("load", { limit: 10 });
      writeFileSync("report.json", JSON.stringify({ loaded: (ctx.upstream.load as { items: number }).items, keys: page.instances.map((i) => i.key + "=" + JSON.stringify(i.summary)), next: page.next }));
    },
  },
});
`,
  });
});
afterAll(() => removeProject(project));

describe("a mapped task in a pipeline file, run by idem run in task hosts", () => {
  it("runs one instance per key with its key and item, and the task after them", () => {
    const run = idem("run", "files", "--date", "2026-09-01");
    expect(run.err + run.out).toMatch(/run files@2026-09-01 success/);
    expect(run.code).toBe(0);
    expect(readdirSync(join(project, "out")).sort()).toEqual(["a.csv", "b.csv", "sub%2Fc.csv"]);
    expect(readFileSync(join(project, "out", "sub%2Fc.csv"), "utf8")).toBe('load 2026-09-01 "sub/c.csv"');
    // The reduce, in a task host, read its instances' summaries through the worker.
    expect(JSON.parse(readFileSync(join(project, "report.json"), "utf8"))).toEqual({
      loaded: 3, keys: ['a.csv={"rows":1}', 'b.csv={"rows":1}', 'sub/c.csv={"rows":1}'], next: null,
    });
  });

  it("a backfill's dry run counts the mapped work it will make from the item counts of completed runs, labelled an estimate", () => {
    const plan = idem("backfill", "files", "--from", "2026-09-03", "--to", "2026-09-05", "--dry-run");
    expect(plan.err).toBe("");
    expect(plan.code).toBe(0);
    expect(plan.out).toContain("mapped work (estimate: the median item count of each mapped task in its last 20 completed runs, times 3 dates):\n");
    expect(plan.out).toContain("  load: ~3 instances a date (median of 1 completed run, last 3) x 3 = ~9\n  total: ~9 mapped instances (estimate)\n");
    const json = JSON.parse(idem("backfill", "files", "--from", "2026-09-03", "--to", "2026-09-05", "--dry-run", "--json").out);
    expect(json.mapped).toMatchObject({ dates: 3, instances: 9, tasks: [{ taskId: "load", perDate: 3, last: 3, runsSeen: 1, instances: 9 }] });
  });

  it("lists a mapped task's instances by key, a page at a time, with a filter", () => {
    const first = idem("tasks", "files@2026-09-01", "--mapped", "load", "--limit", "2");
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/^KEY\s+STATE\s+TRY\s+NOTE\na\.csv\s+success\s+1\s+\{"rows":1\}\nb\.csv\s+success/);
    expect(first.out).toContain('more: idem tasks files@2026-09-01 --mapped load --after "b.csv"');
    const second = idem("tasks", "files@2026-09-01", "--mapped", "load", "--after", "b.csv", "--json");
    expect(JSON.parse(second.out)).toMatchObject({ items: [{ key: "sub/c.csv", taskId: "load[sub/c.csv]", state: "success", item: '"sub/c.csv"' }], next: null });
    expect(JSON.parse(idem("tasks", "files@2026-09-01", "--mapped", "load", "--prefix", "sub/", "--json").out).items.map((i: { key: string }) => i.key)).toEqual(["sub/c.csv"]);
    expect(JSON.parse(idem("tasks", "files@2026-09-01", "--mapped", "load", "--state", "failed", "--json").out).items).toEqual([]);
    const bad = idem("tasks", "files@2026-09-01", "--mapped", "load", "--state", "done");
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("--state: unknown state done");
  });

  it("lists a run's tasks with a mapped task as one row counting its instances by state, and names --mapped for its keys", () => {
    const tasks = idem("tasks", "files@2026-09-01");
    expect(tasks.code).toBe(0);
    expect(tasks.out).toMatch(/\nload\s+success\s+1\/\d+\s.*3 mapped instances: 3 success\n/);
    expect(tasks.out).not.toContain("load[");
    expect(tasks.out.trimEnd().split("\n").at(-1)).toBe("keys: idem tasks files@2026-09-01 --mapped load");
    const json = JSON.parse(idem("tasks", "files@2026-09-01", "--json").out) as { taskId: string; mapped: { total: number; states: { success: number } } | null }[];
    expect(json.map((t) => t.taskId)).toEqual(["list", "load", "report"]);
    expect(json[1]!.mapped).toMatchObject({ total: 3, states: { success: 3 } });
  });

  it("clears one key by a glob: that instance and the reduce wait again, every other key stays done", () => {
    const none = idem("clear", "files@2026-09-01", "--task", "load[zz*]", "--reason", "reload");
    expect(none.code).not.toBe(0);
    expect(none.err).toContain("no instance of load matches load[zz*]");
    const cleared = idem("clear", "files@2026-09-01", "--task", "load[sub/*]", "--reason", "late correction");
    expect(cleared.err).toBe("");
    expect(cleared.code).toBe(0);
    const states = JSON.parse(idem("tasks", "files@2026-09-01", "--mapped", "load", "--json").out).items.map((i: { key: string; state: string }) => `${i.key} ${i.state}`);
    expect(states).toEqual(["a.csv success", "b.csv success", "sub/c.csv queued"]);
    const audit = JSON.parse(idem("audit", "--pipeline", "files", "--json").out)[0];
    expect(audit).toMatchObject({ action: "clear", taskId: "load[sub/*]", details: { keys: ["sub/c.csv"], keyCount: 1, downstream: ["report"] } });
  });

  it("marks every key a glob matches, says what it marked, and refuses a pattern that can name no key with exit 2 and one line", () => {
    const marked = idem("mark", "files@2026-09-01", "load[sub/*]", "--state", "success", "--reason", "loaded by hand");
    expect(marked.err).toBe("");
    expect(marked.code).toBe(0);
    expect(marked.out).toBe("files@2026-09-01 load[sub/*]: 1 of 1 matching instances marked success (load: success)\n");
    const audit = JSON.parse(idem("audit", "--pipeline", "files", "--json").out)[0];
    expect(audit).toMatchObject({ action: "mark-success", taskId: "load[sub/*]", details: { keys: ["sub/c.csv"], keyCount: 1, markedCount: 1 } });
    const again = idem("mark", "files@2026-09-01", "load[sub/*]", "--state", "success", "--reason", "again");
    expect(again.code).toBe(2);
    expect(again.err).toContain("every instance load[sub/*] matches (1) is success already");
    const empty = idem("mark", "files@2026-09-01", "load[]", "--state", "failed", "--reason", "r");
    expect(empty.code).toBe(2);
    expect(empty.err.trim().split("\n")).toHaveLength(1);
    expect(empty.err).toContain("load[]: the brackets are empty; name a key or a glob");
  });

  it("fails the mapped task with a data error naming pipeline, task, business date and the duplicate key, expanding nothing", () => {
    const run = idem("run", "files", "--date", "2026-09-02");
    expect(run.code).not.toBe(0);
    expect(run.err + run.out).toContain('pipeline files, task load, business date 2026-09-02: items 0 and 2 have the same key "a.csv"');
    expect(run.err + run.out).not.toMatch(/load\[/);
  });
});
