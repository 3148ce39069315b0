import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { externalJobKey } from "../../src/core/policy/external-job.ts";
import { httpJob } from "../../src/engine/external-jobs/http.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness | undefined;
let server: Server | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

interface Run { runId: number; token: string; name: string; life: string; result: string | null; message: string }

/**
 * A server on 127.0.0.1 shaped like Databricks Jobs 2.1: runs/submit (a repeated
 * idempotency_token answers the run it made), runs/get, runs/cancel. With `dropFirstSubmit`, the
 * first submit is taken and then its connection dropped before any answer.
 */
async function databricks(options: { dropFirstSubmit?: boolean } = {}) {
  const runs: Run[] = [];
  const calls: string[] = [];
  let dropped = false;
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const url = new URL(req.url!, "http://127.0.0.1");
      calls.push(`${req.method} ${url.pathname}`);
      const send = (status: number, value: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
      if (req.headers.authorization !== "Bearer dapi-test") return send(401, { error_code: "UNAUTHENTICATED" });
      if (req.method === "POST" && url.pathname === "/api/2.1/jobs/runs/submit") {
        const { idempotency_token: token, run_name: name } = JSON.parse(body) as { idempotency_token: string; run_name: string };
        let run = runs.find((r) => r.token === token);
        if (!run) {
          run = { runId: 1000 + runs.length, token, name, life: "PENDING", result: null, message: "" };
          runs.push(run);
        }
        if (options.dropFirstSubmit && !dropped) {
          dropped = true;
          return req.socket.destroy();
        }
        return send(200, { run_id: run.runId });
      }
      if (req.method === "GET" && url.pathname === "/api/2.1/jobs/runs/get") {
        const run = runs.find((r) => r.runId === Number(url.searchParams.get("run_id")));
        if (!run) return send(404, { error_code: "RESOURCE_DOES_NOT_EXIST" });
        return send(200, {
          run_id: run.runId,
          state: { life_cycle_state: run.life, ...(run.result ? { result_state: run.result } : {}), state_message: run.message },
          run_page_url: `https://dbc.example/#job/runs/${run.runId}`,
        });
      }
      if (req.method === "POST" && url.pathname === "/api/2.1/jobs/runs/cancel") {
        const run = runs.find((r) => r.runId === (JSON.parse(body) as { run_id: number }).run_id)!;
        if (!run.result) Object.assign(run, { life: "TERMINATED", result: "CANCELED", message: "cancelled by idem" });
        return send(200, {});
      }
      send(404, {});
    });
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/2.1/jobs`;
  const job = httpJob({
    headers: () => ({ authorization: "Bearer dapi-test" }),
    submit: {
      url: `${base}/runs/submit`,
      body: (ctx, key) => ({ run_name: `sales ${ctx.businessDate}${ctx.mapKey === null ? "" : ` ${ctx.mapKey}`}`, idempotency_token: key, tasks: [{ task_key: "etl", notebook_task: { notebook_path: "/etl" } }] }),
      handle: "run_id",
    },
    status: {
      url: `${base}/runs/get?run_id={handle}`,
      state: ["state.result_state", "state.life_cycle_state"],
      running: ["PENDING", "QUEUED", "RUNNING", "TERMINATING", "BLOCKED"],
      succeeded: ["SUCCESS"],
      message: "state.state_message",
    },
    cancel: { url: `${base}/runs/cancel`, body: (handle) => ({ run_id: Number(handle) }) },
    link: "https://dbc.example/#job/runs/{handle}",
  });
  return { runs, calls, job };
}

const london = () => daily({ at: "02:00", timezone: "Europe/London" });

describe("the HTTP job adapter against a Databricks-shaped server", () => {
  it("a submit whose connection drops after the server took it is retried under the same key: one run", async () => {
    const remote = await databricks({ dropFirstSubmit: true });
    const p = pipeline("dbx", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      etl: { external: remote.job, pollInterval: "1m", pollBackoff: false, retries: 2, retryDelay: 0 },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    expect(remote.runs).toHaveLength(1);
    expect(remote.calls.filter((c) => c.endsWith("runs/submit"))).toHaveLength(2);
    const attempts = await h.store.listAttempts("dbx@2026-09-01", "etl");
    expect(attempts.map((a) => [a.tryNumber, a.state, a.errorClass])).toEqual([[1, "failed", "TaskFailed"], [2, "rescheduled", null]]);
    expect((await h.store.listExternalJobs("dbx@2026-09-01"))[0]).toMatchObject({ handle: '"1000"', link: "https://dbc.example/#job/runs/1000", adapter: "http" });
    remote.runs[0]!.life = "RUNNING";
    await h.at("2026-09-02T01:01:00Z");
    Object.assign(remote.runs[0]!, { life: "TERMINATED", result: "SUCCESS" });
    await h.at("2026-09-02T01:02:00Z");
    expect((await h.runs("dbx"))[0]!.state).toBe("success");
    expect((await h.store.listAttempts("dbx@2026-09-01", "etl")).at(-1)!.summary).toMatchObject({ remoteState: "SUCCESS" });
    expect(remote.runs).toHaveLength(1);
  });

  it("a failed run fails the try with the server's message; a timeout cancels the run on the server", async () => {
    const remote = await databricks();
    const p = pipeline("dbx", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      etl: { external: remote.job, pollInterval: "10m", pollBackoff: false, timeout: "15m", retries: 1, retryDelay: 0 },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    Object.assign(remote.runs[0]!, { life: "INTERNAL_ERROR", result: "FAILED", message: "cluster failed to start" });
    await h.at("2026-09-02T01:10:00Z");
    const failed = (await h.store.listAttempts("dbx@2026-09-01", "etl")).find((a) => a.state === "failed")!;
    expect(failed.errorMessage).toBe('http job "1000" failed: job 1000 is FAILED: cluster failed to start');
    expect(remote.runs).toHaveLength(2); // the retry submits a new run under a new key
    await h.at("2026-09-02T01:20:00Z");
    await h.at("2026-09-02T01:25:00Z");
    expect(remote.runs[1]).toMatchObject({ result: "CANCELED", message: "cancelled by idem" });
    expect((await h.store.listExternalJobs("dbx@2026-09-01")).map((j) => j.state)).toEqual(["failed", "cancelled"]);
    expect((await h.store.listAttempts("dbx@2026-09-01", "etl")).at(-1)).toMatchObject({ errorClass: "Timeout" });
  });
  it("a mapped task submits one run per key, each under its own token; a clear of one key cancels that run on the server and submits it again", async () => {
    const remote = await databricks();
    const p = pipeline("dbx", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      regions: { run: () => ({ names: ["eu", "us", "ap"] }) },
      etl: { after: ["regions"], map: { items: { task: "regions", field: "names" } }, external: remote.job, pollInterval: "1m", pollBackoff: false },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    expect(remote.runs.map((r) => r.name).sort()).toEqual(["sales 2026-09-01 ap", "sales 2026-09-01 eu", "sales 2026-09-01 us"]);
    const tokenOf = (region: string, submission = 1) => externalJobKey({ pipelineId: "dbx", businessDate: "2026-09-01", taskId: "etl", mapKey: region, submission });
    for (const region of ["eu", "us", "ap"]) expect(remote.runs.find((r) => r.name.endsWith(region))!.token).toBe(tokenOf(region));
    const us = remote.runs.find((r) => r.name.endsWith("us"))!;
    await h.engine.clear("dbx@2026-09-01", { taskId: "etl[us]", reason: "us input replaced" });
    await h.at("2026-09-02T01:01:00Z");
    expect(us).toMatchObject({ result: "CANCELED", message: "cancelled by idem" });
    expect(remote.runs.filter((r) => r.name.endsWith("us")).map((r) => r.token)).toEqual([tokenOf("us"), tokenOf("us", 2)]);
    expect(remote.runs).toHaveLength(4);
    for (const run of remote.runs) if (!run.result) Object.assign(run, { life: "TERMINATED", result: "SUCCESS" });
    await h.at("2026-09-02T01:02:00Z");
    expect((await h.runs("dbx"))[0]!.state).toBe("success");
    const states = async (region: string) => (await h!.store.listExternalJobs("dbx@2026-09-01", `etl[${region}]`)).map((j) => j.state);
    expect([await states("eu"), await states("us"), await states("ap")]).toEqual([["succeeded"], ["cancelled", "succeeded"], ["succeeded"]]);
  });
});
