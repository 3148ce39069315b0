import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeProject, queryState, removeProject, repo, startProcess, waitFor, type Daemon } from "../support/processes.ts";

let project = "";
let server: Server | null = null;
const daemons: Daemon[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
  await new Promise((r) => (server ? server.close(r) : r(null)));
  server = null;
  if (project) removeProject(project);
  project = "";
});

const SLACK_SECRET = "XoXoSlackHookSecret77";
const ROUTING_KEY = "pdroutingkey0123456789abcdef0123";

/** A CLI call that leaves this process's event loop free: the peers it calls live here. */
function idem(cwd: string, env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** A Slack peer that takes the message, and a PagerDuty peer that refuses it, quoting the request (routing key included). */
async function peers(): Promise<{ port: number; slack: string[] }> {
  const slack: string[] = [];
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (d) => (body += d));
    request.on("end", () => {
      if (request.url === `/services/T1/B1/${SLACK_SECRET}`) {
        slack.push(body);
        return void response.writeHead(200).end("ok");
      }
      response.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ status: "invalid event", message: `refused ${body}` }));
    });
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return { port: (server.address() as { port: number }).port, slack };
}

function config(port: number): string {
  return `import { defineConfig } from "idem";
export default defineConfig({
  notifiers: {
    chat: { slack: { urlEnv: "SLACK_URL" } },
    pd: { pagerduty: { routingKeyEnv: "PD_KEY", url: "http://127.0.0.1:${port}/v2/enqueue" } },
  },
  defaultNotify: ["chat", "pd"],
  uiUrl: "https://idem.example.com",
  schedulerLeaseMs: 1500,
});
`;
}

const LEAKY = `
import { pipeline, daily } from "idem";
export const leaky = pipeline("leaky", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  talk: { run: (ctx) => {
    ctx.log.info("posting to " + process.env.SLACK_URL);
    throw new Error("PagerDuty refused key " + process.env.PD_KEY);
  } },
});
`;

describe("notifiers in a real project", () => {
  it("never shows a notifier's secret: not in task logs, alert records, incidents, the daemon's log or the CLI's output", async () => {
    const { port, slack } = await peers();
    project = makeProject({ "idem.config.ts": config(port), "pipelines/leaky.ts": LEAKY });
    const env = { ...process.env, SLACK_URL: `http://127.0.0.1:${port}/services/T1/B1/${SLACK_SECRET}`, PD_KEY: ROUTING_KEY };
    const cli = (...args: string[]) => idem(project, env, ...args);
    const run = await cli("run", "leaky", "--date", "2026-09-01");
    expect(run.status).toBe(1);
    const scheduler = startProcess([process.execPath, join(repo, "bin/idem.js"), "scheduler"], { cwd: project, env });
    daemons.push(scheduler);
    const body = await waitFor("the alert to reach Slack", () => slack[0], 30_000);
    await waitFor("PagerDuty's refusal to be recorded", () => queryState<{ last_error: string | null }>(project, "SELECT last_error FROM alert_outbox WHERE notifier = 'pd'")[0]?.last_error ?? undefined);
    await scheduler.stop();

    const test = await cli("alerts", "test", "pd");
    expect(test.status).toBe(1);
    expect(test.stderr.trim().split("\n")).toHaveLength(1);
    expect(test.stderr).toMatch(/^idem: notifier pd failed: pagerduty pd: HTTP 400 \(.*routing_key.*\*\*\*.*\)\n$/);

    const records = queryState<Record<string, unknown>>(project, "SELECT * FROM alert_outbox");
    expect(records.find((r) => r.notifier === "pd")!.last_error).toMatch(/^pagerduty pd: HTTP 400 \(.*routing_key.*\*\*\*/);
    const everything = [
      run.stdout, run.stderr, body, scheduler.output(), test.stdout, test.stderr, JSON.stringify(records),
      (await cli("logs", "leaky@2026-09-01", "talk")).stdout,
      (await cli("incidents", "--all", "--json")).stdout,
      (await cli("tasks", "leaky@2026-09-01", "--json")).stdout,
    ].join("\n");
    expect(everything).not.toContain(SLACK_SECRET);
    expect(everything).not.toContain(ROUTING_KEY);
    expect((await cli("logs", "leaky@2026-09-01", "talk")).stdout).toContain("posting to ***");
    expect(JSON.parse(body).text).toContain("PagerDuty refused key ***");
  });

  it("idem alerts test sends through the notifier and says so; an unknown notifier or a missing variable is one line, exit 2", async () => {
    const { port, slack } = await peers();
    project = makeProject({ "idem.config.ts": config(port), "pipelines/leaky.ts": LEAKY });
    const withEnv = { ...process.env, SLACK_URL: `http://127.0.0.1:${port}/services/T1/B1/${SLACK_SECRET}`, PD_KEY: ROUTING_KEY };
    const cli = (env: NodeJS.ProcessEnv, ...args: string[]) => idem(project, env, ...args);
    const sent = await cli(withEnv, "alerts", "test", "chat");
    expect([sent.status, sent.stdout, sent.stderr]).toEqual([0, "sent a test message to chat (slack)\n", ""]);
    expect(JSON.parse(slack[0]!).text).toBe("[TEST] test: a test message from idem to the notifier chat");
    const logged = await cli(withEnv, "alerts", "test", "log");
    expect(logged.status).toBe(0);
    expect(logged.stdout).toMatch(/^ALERT TEST test:log:\d+: a test message from idem to the notifier log\nsent a test message to log \(log\)\n$/);

    const unknown = await cli(withEnv, "alerts", "test", "pager");
    expect([unknown.status, unknown.stderr]).toEqual([2, `idem: no notifier named "pager" (known: log, chat, pd)\n`]);

    const { PD_KEY: _, ...withoutKey } = withEnv;
    const missing = `idem: ${join(project, "idem.config.ts")}: notifiers.pd.pagerduty.routingKeyEnv: PD_KEY is not set in the environment\n`;
    const validate = await cli(withoutKey, "validate");
    expect([validate.status, validate.stderr]).toEqual([2, missing]);
    const test = await cli(withoutKey, "alerts", "test", "pd");
    expect([test.status, test.stderr]).toEqual([2, missing]);
    const scheduler = await cli(withoutKey, "scheduler");
    expect([scheduler.status, scheduler.stderr]).toEqual([2, missing]);
    // A command that sends no alert does not need the notifiers' secrets.
    expect((await cli(withoutKey, "incidents")).status).toBe(0);
  });
});
