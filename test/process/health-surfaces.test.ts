import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../../src/core/model/clock.ts";
import { serveHealth } from "../../src/cli/actions/daemon.ts";
import { openProject } from "../../src/engine/compose.ts";
import type { Engine } from "../../src/engine/engine.ts";
import type { ProcessLog } from "../../src/engine/logging/process-log.ts";
import { loadConfig } from "../../src/engine/project/config.ts";
import { call, testApp } from "../support/http.ts";
import { makeProject, removeProject, repo } from "../support/processes.ts";
import { CuttableRelay, dropSchema, freshSchema, schemaUrl, testPostgresUrl } from "./postgres-support.ts";

const url = testPostgresUrl();
const T0 = Date.parse("2026-09-03T03:00:00Z");
const GOOD = `import { pipeline, daily } from "idem";
export const good = pipeline("good", { schedule: daily({ at: "02:00", timezone: "UTC" }), start: "2026-09-01" }, { load: { run: () => {} } });
`;

/** A daemon's log that writes nothing: only the answers matter here. */
const QUIET: ProcessLog = { format: "pretty", enabled: () => false, write: () => {}, identify: () => {}, follow: () => () => {} };

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/**
 * The installation's health through every surface, for one state of the store at one instant:
 * `idem serve`'s GET /health and GET /api/v1/health, a daemon's health port, and `idem health`
 * (a process of its own, under IDEM_NOW); and, while the store answers, the UI's health page.
 */
async function answers(engine: Engine, project: string, now: number) {
  const app = testApp(engine, "tester");
  const server = await serveHealth(engine, 0, QUIET);
  try {
    const serve = await call(app, "/health");
    const api = await call(app, "/api/v1/health");
    const daemonResponse = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/health`);
    const daemon = { status: daemonResponse.status, body: await daemonResponse.json() };
    const cli = await idemHealth(project, now);
    return { serve, api, daemon, cli };
  } finally {
    server.close();
  }
}

/** `idem health --json` under IDEM_NOW, waited for without blocking this process (the relay to the store runs in it). */
async function idemHealth(project: string, now: number): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(repo, "bin/idem.js"), "health", "--json"], {
    cwd: project, env: { ...process.env, IDEM_NOW: new Date(now).toISOString() }, stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const status = await new Promise<number | null>((resolve) => child.once("close", resolve));
  return { status, stdout, stderr };
}

describe.skipIf(!url)("every surface gives the engine's one health verdict", () => {
  it("healthy, scheduler lease stale, checker stale, a pipeline file broken, store unreachable: the same answer from serve, a daemon's port, the API, idem health and the UI", async () => {
    const relay = new CuttableRelay(url!);
    await relay.open();
    const schema = freshSchema();
    cleanup.push(async () => dropSchema(url!, schema), async () => relay.close());
    const project = makeProject({
      "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({ state: ${JSON.stringify(schemaUrl(relay.url(url!), schema))}, checkerStaleMs: 60000 });\n`,
      "pipelines/good.ts": GOOD,
    });
    cleanup.push(async () => removeProject(project));
    let now = T0;
    const clock: Clock = { now: () => now, sleep: systemClock.sleep };
    const engine = await openProject(await loadConfig(project), { pipelines: true, clock });
    cleanup.push(async () => engine.close().catch(() => {}));

    const expectEverywhere = async (status: string, healthy: boolean, message: RegExp) => {
      const { serve, api, daemon, cli } = await answers(engine, project, now);
      const code = healthy ? 200 : 503;
      expect([serve.status, serve.body.status, serve.body.healthy], "idem serve's /health").toEqual([code, status, healthy]);
      expect(serve.body.message).toMatch(message);
      expect(daemon, "a daemon's /health").toEqual({ status: code, body: serve.body });
      expect([api.status, api.body.status, api.body.healthy, api.body.message], "/api/v1/health").toEqual([code, status, healthy, serve.body.message]);
      const ui = await call(testApp(engine, "tester"), "/ui/health");
      expect([ui.status, /<td><b>Installation<\/b><\/td><td><span class="b s-(\w+)"/.exec(ui.body)?.[1]], "the UI's health page").toEqual([200, healthy ? "success" : "failed"]);
      expect(cli.stdout, `idem health said nothing on stdout (exit ${cli.status}): ${cli.stderr}`).not.toBe("");
      const report = JSON.parse(cli.stdout);
      expect([cli.status, report.status, report.healthy, report.message], `idem health: ${cli.stderr}`).toEqual([healthy ? 0 : 1, status, healthy, serve.body.message]);
    };

    // A checker that passed 5 s ago and a scheduler within its lease.
    await engine.store.tryLead({ role: "scheduler", holder: "scheduler-1", now, ttlMs: 15_000 });
    await engine.watchdog("serve").pass();
    now += 5_000;
    await expectEverywhere("ok", true, /^checker run by serve .*, last pass 5s ago; scheduler scheduler-1 leads/);

    // The scheduler stops renewing its lease; the checker keeps passing.
    now = T0 + 30_000;
    await engine.watchdog("serve").pass();
    await expectEverywhere("no_scheduler", false, /^checker run by serve .*; no scheduler has held the lead since 2026-09-03 03:00 UTC \(last: scheduler-1\)$/);

    // The scheduler is back, but nothing has passed the checks for more than checkerStaleMs.
    now = T0 + 200_000;
    await engine.store.tryLead({ role: "scheduler", holder: "scheduler-1", now, ttlMs: 15_000 });
    await expectEverywhere("stale", false, /^the checker's last pass was 170s ago \(serve .*\): nothing checks the promises or sends alerts; scheduler scheduler-1 leads/);

    // Checker and scheduler fine, a pipeline file that does not load.
    await engine.watchdog("serve").pass();
    writeFileSync(join(project, "pipelines/broken.ts"), `import { pipeline } from "idem";\nexport const b = pipeline("broken", {\n  schedule: ,\n});\n`);
    await engine.catalog.refresh();
    await expectEverywhere("degraded", false, /; scheduler scheduler-1 leads .*; 1 pipeline file\(s\) did not load$/);

    // The state store out of reach: an answer, not an error.
    await relay.cut();
    const { serve, daemon, cli } = await answers(engine, project, now);
    expect([serve.status, serve.body.status, serve.body.healthy, serve.body.checker], JSON.stringify(serve.body)).toEqual([503, "unreachable", false, null]);
    // The store retries for longer than an asker waits: health answers within 5 s regardless.
    expect(serve.body.message).toMatch(/^the state store (postgres:\/\/.* cannot be reached: |did not answer within 5 s$)/);
    expect(daemon).toEqual({ status: 503, body: serve.body });
    // `idem health` cannot open the store at all: the exit code every command gives for that (3), with the same words.
    expect([cli.status, cli.stderr]).toEqual([3, expect.stringMatching(/idem: the state store postgres:\/\/.* cannot be reached: /)]);
    // Back, so that the reads still retrying end and the engine closes at once.
    await relay.open();
    await expectEverywhere("degraded", false, /did not load$/);
  }, 120_000);
});
