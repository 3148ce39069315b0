import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { makeProject, queryState, removeProject, repo } from "../support/processes.ts";
import { attemptSpanIdOf, runSpanIdOf, traceIdOf } from "../../src/engine/tracing/trace-ids.ts";

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes: { key: string; value: Record<string, unknown> }[];
  status?: { code?: number; message?: string };
}

let project = "";
let receiver: Server | null = null;
afterEach(async () => {
  if (project) removeProject(project);
  project = "";
  await new Promise((r) => (receiver ? receiver.close(r) : r(undefined)));
  receiver = null;
});

/** An OTLP/HTTP collector in this process: every span posted as JSON to /v1/traces. */
async function otlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; paths: string[] }> {
  const spans: OtlpSpan[] = [];
  const paths: string[] = [];
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      paths.push(`${req.method} ${req.url} ${req.headers["content-type"]}`);
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      for (const resource of body.resourceSpans ?? []) for (const scope of resource.scopeSpans ?? []) spans.push(...scope.spans);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => receiver!.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(receiver!.address() as AddressInfo).port}`, spans, paths };
}

/** `flaky` fails its first try and succeeds on its retry; `report`, a command after it, writes what it was handed. */
const PIPELINE = `
import { writeFileSync } from "node:fs";
import { pipeline } from "idem";
export const traced = pipeline("traced", {}, {
  flaky: {
    retries: 1,
    retryDelay: 50,
    run: (ctx) => {
      writeFileSync("flaky-" + ctx.tryNumber + ".txt", ctx.traceparent + "\\n" + process.env.TRACEPARENT);
      if (ctx.tryNumber === 1) throw new Error("warehouse not ready");
    },
  },
  report: { after: ["flaky"], command: ["bash", "-c", "printf %s \\"$TRACEPARENT\\" > report.txt"] },
});
`;

function idem(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd: project, env: { ...process.env, ...env } });
    let output = "";
    child.stdout.on("data", (c) => (output += c));
    child.stderr.on("data", (c) => (output += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, output });
    });
  });
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
};

describe("traces of a run, sent over OTLP/HTTP", () => {
  it("one trace per run, reruns included: the run's span and a span per attempt, ids derived from the run, TRACEPARENT handed to the task code", async () => {
    const otlp = await otlpReceiver();
    project = makeProject({ "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({});\n`, "pipelines/traced.ts": PIPELINE });
    const run = await idem({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_SERVICE_NAME: "idem-test" }, "run", "traced", "--date", "2026-09-01");
    expect(run.status, run.output).toBe(0);

    const runId = "traced@2026-09-01";
    const traceId = traceIdOf(runId);
    expect(otlp.paths.every((p) => p.startsWith("POST /v1/traces application/json")), otlp.paths.join("\n")).toBe(true);
    const byName = (name: string) => otlp.spans.filter((s) => s.name === name).sort((a, b) => Number(attribute(a, "idem.try")) - Number(attribute(b, "idem.try")));
    const runSpans = byName("traced 2026-09-01");
    const flaky = byName("traced.flaky");
    const report = byName("traced.report");
    expect(runSpans).toHaveLength(1);
    expect(flaky).toHaveLength(2);
    expect(report).toHaveLength(1);
    expect(otlp.spans).toHaveLength(4);
    for (const span of otlp.spans) expect(span.traceId).toBe(traceId);

    const runSpan = runSpans[0]!;
    expect(runSpan.spanId).toBe(runSpanIdOf(runId));
    expect(runSpan.parentSpanId ?? "").toBe("");
    expect(attribute(runSpan, "idem.run_id")).toBe(runId);
    expect(attribute(runSpan, "idem.state")).toBe("success");
    for (const attempt of [...flaky, ...report]) {
      expect(attempt.parentSpanId).toBe(runSpan.spanId);
      expect(BigInt(attempt.startTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(runSpan.startTimeUnixNano));
      expect(BigInt(attempt.endTimeUnixNano)).toBeLessThanOrEqual(BigInt(runSpan.endTimeUnixNano));
      expect(attribute(attempt, "idem.pipeline")).toBe("traced");
      expect(attribute(attempt, "idem.run_id")).toBe(runId);
      expect(attribute(attempt, "idem.business_date")).toBe("2026-09-01");
    }
    const [first, second] = flaky;
    expect(first!.spanId).toBe(attemptSpanIdOf(runId, "flaky", 1));
    expect(String(attribute(first!, "idem.try"))).toBe("1"); // OTLP JSON may write 64-bit integers as strings
    expect(attribute(first!, "idem.state")).toBe("up_for_retry");
    expect(attribute(first!, "error.type")).toBe("TaskFailed");
    expect(attribute(first!, "idem.error_message")).toContain("warehouse not ready");
    expect(first!.status?.code).toBe(2); // ERROR
    expect(second!.spanId).toBe(attemptSpanIdOf(runId, "flaky", 2));
    expect(attribute(second!, "idem.state")).toBe("success");
    expect(second!.status?.code ?? 0).not.toBe(2);
    expect(attribute(report[0]!, "idem.task")).toBe("report");
    expect(attribute(report[0]!, "idem.outcome")).toBe("success");

    // Written from the records: each span starts and ends when the store says its attempt or run did.
    const ms = (nanos: string | number) => Number(BigInt(nanos) / 1_000_000n);
    const recorded = queryState<{ task_id: string; try_number: number; started_at: number; ended_at: number }>(project, "SELECT task_id, try_number, started_at, ended_at FROM attempts");
    for (const attempt of [...flaky, ...report]) {
      const record = recorded.find((r) => r.task_id === attribute(attempt, "idem.task") && String(r.try_number) === String(attribute(attempt, "idem.try")))!;
      expect([ms(attempt.startTimeUnixNano), ms(attempt.endTimeUnixNano)]).toEqual([record.started_at, record.ended_at]);
    }
    const [runRecord] = queryState<{ started_at: number; ended_at: number }>(project, "SELECT started_at, ended_at FROM runs");
    expect([ms(runSpan.startTimeUnixNano), ms(runSpan.endTimeUnixNano)]).toEqual([runRecord!.started_at, runRecord!.ended_at]);

    // The task code was handed its attempt's context: as ctx.traceparent, in the host's environment, in the command's.
    const flakyTwo = `00-${traceId}-${attemptSpanIdOf(runId, "flaky", 2)}-01`;
    expect(readFileSync(join(project, "flaky-2.txt"), "utf8")).toBe(`${flakyTwo}\n${flakyTwo}`);
    expect(readFileSync(join(project, "report.txt"), "utf8")).toBe(`00-${traceId}-${report[0]!.spanId}-01`);

    // Run again (a rerun of the same run, as after a kill -9): its attempts join the same trace, under the same run span.
    const sent = otlp.spans.length;
    const again = await idem({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url }, "run", "traced", "--date", "2026-09-01");
    expect(again.status, again.output).toBe(0);
    const rerun = otlp.spans.slice(sent);
    expect(rerun.map((s) => `${s.name} ${s.spanId}`).sort()).toEqual([
      `traced 2026-09-01 ${runSpanIdOf(runId)}`,
      `traced.flaky ${attemptSpanIdOf(runId, "flaky", 3)}`,
      `traced.report ${attemptSpanIdOf(runId, "report", 2)}`,
    ]);
    for (const span of rerun) expect(span.traceId).toBe(traceId);
    for (const span of rerun.filter((s) => s.name !== "traced 2026-09-01")) expect(span.parentSpanId).toBe(runSpanIdOf(runId));
  }, 90_000);

  it("a run that ends with no attempt (its tasks skipped, or marked failed, by an operator) has its run span, from the process that ended it", async () => {
    const otlp = await otlpReceiver();
    project = makeProject({
      "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({});\n`,
      "pipelines/held.ts": `import { pipeline } from "idem";\nexport const held = pipeline("held", {}, {\n  first: { run: () => {} },\n  second: { after: ["first"], run: () => {} },\n});\n`,
    });
    for (const date of ["2026-09-01", "2026-09-02"]) {
      const trigger = await idem({}, "trigger", "held", "--date", date, "--reason", "no worker will take it");
      expect(trigger.status, trigger.output).toBe(0);
    }
    const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" };
    const skip = await idem(traced, "skip", "held@2026-09-01", "first", "--reason", "the feed is gone for good");
    expect(skip.status, skip.output).toBe(0);
    const mark = await idem(traced, "mark", "held@2026-09-02", "first", "--state", "failed", "--reason", "the file is wrong");
    expect(mark.status, mark.output).toBe(0);

    const ms = (nanos: string | number) => Number(BigInt(nanos) / 1_000_000n);
    const records = queryState<{ run_id: string; state: string; created_at: number; started_at: number | null; ended_at: number }>(project, "SELECT run_id, state, created_at, started_at, ended_at FROM runs ORDER BY run_id");
    expect(records.map((r) => `${r.run_id} ${r.state} ${r.started_at}`)).toEqual(["held@2026-09-01 success null", "held@2026-09-02 failed null"]);
    expect(otlp.spans.map((s) => s.name).sort()).toEqual(["held 2026-09-01", "held 2026-09-02"]);
    for (const record of records) {
      const span = otlp.spans.find((s) => attribute(s, "idem.run_id") === record.run_id)!;
      expect([span.traceId, span.spanId, span.parentSpanId ?? ""]).toEqual([traceIdOf(record.run_id), runSpanIdOf(record.run_id), ""]);
      expect(attribute(span, "idem.state")).toBe(record.state);
      // Nothing started: the span runs from the run's creation to its end.
      expect([ms(span.startTimeUnixNano), ms(span.endTimeUnixNano)]).toEqual([record.created_at, record.ended_at]);
      expect(span.status?.code ?? 0).toBe(record.state === "failed" ? 2 : 0);
    }
  }, 90_000);

  it("hands no TRACEPARENT and sends nothing when no endpoint is set", async () => {
    project = makeProject({ "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({});\n`, "pipelines/traced.ts": PIPELINE });
    const env = { ...process.env };
    delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    delete env.TRACEPARENT;
    const run = await idem(env, "run", "traced", "--date", "2026-09-01");
    expect(run.status, run.output).toBe(0);
    expect(readFileSync(join(project, "flaky-2.txt"), "utf8")).toBe("null\nundefined");
    expect(readFileSync(join(project, "report.txt"), "utf8")).toBe("");
  }, 90_000);

  const pgUrl = process.env.IDEM_TEST_PG_URL;
  it.skipIf(!pgUrl)("leads each statement of a SQL task with the attempt's traceparent as a comment", async () => {
    const otlp = await otlpReceiver();
    const table = `idem_traced_sql_${process.pid}`;
    project = makeProject({
      "idem.config.ts": `export default { connections: { pg: { postgres: "$PG_URL" } } };\n`,
      "pipelines/seen.ts": `import { pipeline } from "idem";
export const seen = pipeline("seen", {}, {
  load: { connection: "pg", sql: "CREATE TABLE IF NOT EXISTS ${table} (run text, query text); INSERT INTO ${table} SELECT $run_id, current_query()" },
});
`,
    });
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    try {
      const run = await idem({ PG_URL: pgUrl, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/v1/traces` }, "run", "seen", "--date", "2026-09-01");
      expect(run.status, run.output).toBe(0);
      const { rows } = await client.query(`SELECT query FROM ${table} WHERE run = 'seen@2026-09-01'`);
      const traceparent = `00-${traceIdOf("seen@2026-09-01")}-${attemptSpanIdOf("seen@2026-09-01", "load", 1)}-01`;
      expect(rows).toHaveLength(1);
      expect(rows[0].query).toMatch(new RegExp(`^/\\* traceparent='${traceparent}' \\*/\\s+INSERT INTO ${table}`));
      expect(otlp.spans.map((span) => span.name).sort()).toEqual(["seen 2026-09-01", "seen.load"]);
    } finally {
      await client.query(`DROP TABLE IF EXISTS ${table}`);
      await client.end();
    }
  }, 90_000);
});
