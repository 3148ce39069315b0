import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { ExternalJob } from "../../src/core/pipeline/types.ts";
import { daily } from "../../src/core/time/index.ts";
import type { Principal } from "../../src/http/env.ts";
import { poolsPage } from "../../src/http/ui/pages/operations.ts";
import { taskPage } from "../../src/http/ui/pages/task.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

const view = () => {
  const principal: Principal = { actor: "vic", role: "viewer", mayAct: false, localUser: false, via: "cookie" };
  return { principal, csrf: "t", url: new URL("http://127.0.0.1/ui/runs/remote@2026-09-01/tasks/etl"), zones: [], flash: null };
};

describe("an external task in the UI", () => {
  it("shows the job it waits on with its handle and a link to it; a link that is not a web page is not followed", async () => {
    const job = (link: string): ExternalJob<{ id: string }> => ({
      adapter: "memory", submit: () => ({ id: "run-42" }), poll: () => ({ state: "running" }), cancel: () => {}, link: () => link,
    });
    const remote = pipeline("remote", { schedule: daily({ at: "02:00" }), start: "2026-09-01", end: "2026-09-01" }, {
      etl: { external: job("https://dbc.example/#job/runs/42"), pollInterval: "10m" },
      sneaky: { external: job("javascript:alert(1)"), pollInterval: "10m" },
    });
    h = await ScheduleHarness.open([remote], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T03:00:00Z");
    const page = (await taskPage(h.engine, view(), "remote@2026-09-01", "etl")).value;
    expect(page).toContain("<h2>Remote jobs</h2>");
    expect(page).toContain("waiting");
    expect(page).toContain("<code>memory</code> <code>{&quot;id&quot;:&quot;run-42&quot;}</code>");
    expect(page).toContain('<a href="https://dbc.example/#job/runs/42" rel="noopener noreferrer">open</a>');
    const sneaky = (await taskPage(h.engine, view(), "remote@2026-09-01", "sneaky")).value;
    expect(sneaky).toContain("<h2>Remote jobs</h2>");
    expect(sneaky).not.toContain("href=\"javascript:");
    expect(sneaky).not.toMatch(/<a href="[^"]*alert/);
  });
  it("the pools page lists a remote job that holds its pool among the holders", async () => {
    const job: ExternalJob<{ id: string }> = { adapter: "memory", submit: () => ({ id: "run-7" }), poll: () => ({ state: "running" }), cancel: () => {} };
    const remote = pipeline("remote", { schedule: daily({ at: "02:00" }), start: "2026-09-01", end: "2026-09-01" }, {
      etl: { external: job, pollInterval: "10m", pool: "cluster", slots: 3, holdPoolWhileRemote: true },
    });
    h = await ScheduleHarness.open([remote], "2026-09-01T00:00:00Z");
    await h.engine.setPool("cluster", 4);
    await h.at("2026-09-02T03:00:00Z");
    const page = (await poolsPage(h.engine, view())).value;
    expect(page).toMatch(/remote@2026-09-01 etl<\/a> <span class="faint">×3 by its remote job<\/span>/);
  });
  it("the task page of an external task whose remote job holds its pool says how many slots of which pool it holds while the job runs", async () => {
    let state: "running" | "succeeded" = "running";
    const job: ExternalJob<{ id: string }> = { adapter: "memory", submit: () => ({ id: "run-7" }), poll: () => ({ state }), cancel: () => {} };
    const remote = pipeline("remote", { schedule: daily({ at: "02:00" }), start: "2026-09-01", end: "2026-09-01" }, {
      etl: { external: job, pollInterval: "10m", pool: "cluster", slots: 3, holdPoolWhileRemote: true },
      plain: { external: job, pollInterval: "10m" },
    });
    h = await ScheduleHarness.open([remote], "2026-09-01T00:00:00Z");
    await h.engine.setPool("cluster", 4);
    await h.at("2026-09-02T03:00:00Z");
    const running = (await taskPage(h.engine, view(), "remote@2026-09-01", "etl")).value;
    expect(running).toContain('<p id="pool-held">While its remote job runs, this task holds 3 slots of pool cluster (holdPoolWhileRemote)');
    expect(running).toMatch(/<code>memory<\/code> <code>[^<]*<\/code>\s*<\/td>\s*<td>3 slots of pool cluster<\/td>/);
    const plain = (await taskPage(h.engine, view(), "remote@2026-09-01", "plain")).value;
    expect(plain).not.toContain('id="pool-held"');
    expect(plain).toContain('<span class="faint">none</span>');
    state = "succeeded";
    await h.at("2026-09-02T03:20:00Z");
    const ended = (await taskPage(h.engine, view(), "remote@2026-09-01", "etl")).value;
    expect(ended).not.toContain('id="pool-held"');
    expect(ended).toContain("<td>3 slots of pool cluster</td>");
  });
});
