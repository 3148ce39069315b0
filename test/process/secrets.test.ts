import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { makeProject, queryState, removeProject, repo, startIdem, waitFor, type Daemon } from "../support/processes.ts";

let project: string;
let server: Server | null = null;
const daemons: Daemon[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
  server?.close();
  if (project) removeProject(project);
});

const TOKEN = "tok_5ecret_9f8e7d6c";
const NAMED = "named-secret-value-42";

describe("secrets stay secret", () => {
  it("masks a secret printed by a task in its log, its error, the task list, the audit log and the webhook body", async () => {
    const bodies: string[] = [];
    server = createServer((request, response) => {
      let body = "";
      request.on("data", (d) => (body += d));
      request.on("end", () => {
        bodies.push(body);
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    project = makeProject({
      "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({
  secrets: ["WAREHOUSE_PASSWORD"],
  notifiers: { hook: { webhook: { url: "http://127.0.0.1:${port}/alerts" } } },
  defaultNotify: ["hook"],
  schedulerLeaseMs: 1500,
});
`,
      "pipelines/leaky.ts": `
import { pipeline, daily } from "idem";
export const leaky = pipeline("leaky", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  talk: { run: (ctx) => {
    const token = process.env.IDEM_SECRET_API_TOKEN;
    ctx.log.info("calling the API with " + token);
    console.log("password is " + process.env.WAREHOUSE_PASSWORD);
    throw new Error("401 for token " + token);
  } },
  shell: { command: ["bash", "-c", "env | grep -E 'IDEM_SECRET|WAREHOUSE'; echo \\"{\\\\\\"token\\\\\\": \\\\\\"$IDEM_SECRET_API_TOKEN\\\\\\"}\\" > $IDEM_SUMMARY_FILE"] },
  bare: { command: ["bash", "-c", "env"], env: { inherit: false, pass: ["PATH"], set: { ONLY: "this" } } },
});
`,
    });
    const env = { ...process.env, IDEM_SECRET_API_TOKEN: TOKEN, WAREHOUSE_PASSWORD: NAMED };
    const cli = (...args: string[]) => spawnSync(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd: project, encoding: "utf8", env });
    const run = cli("run", "leaky", "--date", "2026-09-01", "--reason", `rotating ${TOKEN}`);
    expect(run.status).toBe(1);
    const scheduler = startIdem(project, "scheduler");
    daemons.push(scheduler);
    const body = await waitFor("the alert to arrive", () => bodies[0], 30_000);

    const everything = [
      run.stdout, run.stderr, body,
      cli("logs", "leaky@2026-09-01", "talk").stdout,
      cli("logs", "leaky@2026-09-01", "shell").stdout,
      cli("tasks", "leaky@2026-09-01", "--json").stdout,
      cli("incidents", "--json").stdout,
      cli("audit", "--json").stdout,
    ].join("\n");
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain(NAMED);
    expect(body).toContain("401 for token ***");
    expect(cli("logs", "leaky@2026-09-01", "talk").stdout).toMatch(/calling the API with \*\*\*[\s\S]*password is \*\*\*/);
    expect(cli("logs", "leaky@2026-09-01", "shell").stdout).toMatch(/IDEM_SECRET_API_TOKEN=\*\*\*/);
    expect(JSON.parse(queryState<{ summary: string }>(project, "SELECT summary FROM attempts WHERE task_id = 'shell'")[0]!.summary)).toEqual({ token: "***" });
    // An explicit environment: only what was passed and set.
    const bare = cli("logs", "leaky@2026-09-01", "bare").stdout.split("\n").filter(Boolean).map((l) => l.split("=")[0]!).sort();
    expect(bare).not.toContain("IDEM_SECRET_API_TOKEN");
    expect(bare).not.toContain("WAREHOUSE_PASSWORD");
    expect(bare).toEqual(expect.arrayContaining(["PATH", "ONLY", "IDEM_RUN_ID", "IDEM_SUMMARY_FILE"]));
    expect(bare.filter((name) => !/^(PATH|ONLY|IDEM_.*|PWD|SHLVL|_)$/.test(name))).toEqual([]);
  });
});
