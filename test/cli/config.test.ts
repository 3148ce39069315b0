import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DefinitionErrors } from "../../src/core/model/errors.ts";
import { loadConfig } from "../../src/engine/project/config.ts";

let dir: string;

function write(files: Record<string, string>) {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

const ESM = JSON.stringify({ name: "p", type: "module" });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "idem-config-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("finding and reading idem.config.ts", () => {
  it("finds the config in a folder above, and resolves paths against the config's folder", async () => {
    write({ "package.json": ESM, "idem.config.mjs": `export default { pipelines: "pipelines", connections: { wh: { duckdb: "data/wh.duckdb" } } };`, "pipelines/deep/x.txt": "" });
    const config = await loadConfig(join(dir, "pipelines/deep"));
    expect(config.file).toBe(join(dir, "idem.config.mjs"));
    expect(config.pipelinePaths).toEqual([join(dir, "pipelines")]);
    expect(config.stateDir).toBe(join(dir, ".idem"));
    expect(config.connections).toEqual({ wh: { duckdb: join(dir, "data/wh.duckdb") } });
    expect(config.prefetch).toBe("auto");
    expect(config.bundleCollection).toEqual({ everyMs: 86_400_000, retention: { keepNewest: 3, keepDays: 30 } });
  });

  it("reads when the scheduler collects old bundles: the defaults fill what is not given, false turns it off, a bad value is named", async () => {
    const read = async (setting: string) => {
      const project = mkdtempSync(join(dir, "p-"));
      writeFileSync(join(project, "package.json"), ESM);
      writeFileSync(join(project, "idem.config.mjs"), `export default { collectBundles: ${setting} };`);
      return loadConfig(project).then((c) => c.bundleCollection, (e: Error) => e.message.split(`${join(project, "idem.config.mjs")}:1: `).join("<file>: "));
    };
    expect(await read(`{ everyMs: 3600000, keepDays: 7 }`)).toEqual({ everyMs: 3_600_000, retention: { keepNewest: 3, keepDays: 7 } });
    expect(await read("false")).toBeNull();
    expect(await read(`{ everyMs: 1000 }`)).toBe("<file>: collectBundles.everyMs: expected a whole number >= 60000");
  });

  it("says there is no config here or above, naming the folder", async () => {
    await expect(loadConfig(dir)).rejects.toThrow(`no idem.config.ts here or above (${dir})`);
  });

  it("names a typo'd key, the key it probably meant, and the file", async () => {
    // Each config in a folder of its own: a module once imported stays imported.
    const problem = async (config: string) => {
      const project = mkdtempSync(join(dir, "p-"));
      writeFileSync(join(project, "package.json"), ESM);
      writeFileSync(join(project, "idem.config.mjs"), `export default ${config};`);
      return loadConfig(project).then(() => "no problem", (e: Error) => e.message.split(`${join(project, "idem.config.mjs")}:1: `).join("<file>: "));
    };
    expect(await problem(`{ pipeline: "pipelines" }`)).toBe(`<file>: unknown key "pipeline" (did you mean "pipelines"?)`);
    expect(await problem(`{ connections: { wh: { postgres: "postgres://x", pasword: "$P" } } }`)).toBe(`<file>: connections.wh: unknown key "pasword" (did you mean "password"?)`);
    expect(await problem(`{ connections: { wh: { mysql: "x" } } }`)).toBe("<file>: connections.wh: a connection names exactly one of duckdb, sqlite, postgres");
    expect(await problem(`{ concurrency: 0 }`)).toBe("<file>: concurrency: expected a whole number >= 1");
    expect(await problem(`{ prefetch: "lots" }`)).toBe(`<file>: prefetch: expected a whole number >= 0 or "auto"`);
    expect(await problem(`{ prefetch: -1 }`)).toBe(`<file>: prefetch: expected a whole number >= 0 or "auto"`);
    expect(await problem(`{ datasetWebhook: { secret: "whsec" } }`)).toBe(`<file>: datasetWebhook: unknown key "secret" (did you mean "secretEnv"?)\n<file>: datasetWebhook.secretEnv: missing`);
    expect(await problem(`{ datasetWebhook: { secretEnv: "HOOK", toleranceSeconds: 0 } }`)).toBe("<file>: datasetWebhook.toleranceSeconds: expected a whole number >= 1");
    expect(await problem(`{ notifiers: { ops: { webhook: { url: "https://x", timeout: 5 } } } }`)).toBe(`<file>: notifiers.ops.webhook: unknown key "timeout" (did you mean "timeoutMs"?)`);
  });

  it("names every problem of the config at once, each on the line of its key", async () => {
    write({
      "package.json": ESM,
      "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({
  pipeline: "pipelines",
  concurrency: 0,
  pools: { warehouse: 2 },
  connections: {
    wh: { postgres: "postgres://x",
      pasword: "$P" },
  },
} as never);
`,
    });
    const error = await loadConfig(dir).catch((e: DefinitionErrors) => e);
    const file = join(dir, "idem.config.ts");
    expect((error as DefinitionErrors).problems.map((p) => p.message)).toEqual([
      `${file}:3: unknown key "pipeline" (did you mean "pipelines"?)`,
      `${file}:4: concurrency: expected a whole number >= 1`,
      `${file}:8: connections.wh: unknown key "pasword" (did you mean "password"?)`,
    ]);
  });

  it("checks notifiers of every kind, routes and digests, each problem in one line", async () => {
    const problem = async (config: string) => {
      const project = mkdtempSync(join(dir, "p-"));
      writeFileSync(join(project, "package.json"), ESM);
      writeFileSync(join(project, "idem.config.mjs"), `export default ${config};`);
      return loadConfig(project).then(() => "no problem", (e: Error) => e.message.replace(new RegExp(`^${join(project, "idem.config.mjs")}(:\\d+)?: `), "<file>: "));
    };
    expect(await problem(`{ notifiers: { chat: { slack: { url: "https://hooks.slack.com/services/T/B/X" } } } }`)).toBe("<file>: notifiers.chat.slack.url: secrets are never written in idem.config.ts: put it in an environment variable and name that in urlEnv");
    expect(await problem(`{ notifiers: { pd: { pagerduty: {} } } }`)).toBe("<file>: notifiers.pd.pagerduty.routingKeyEnv: missing");
    expect(await problem(`{ notifiers: { mail: { email: { host: "smtp", from: "a@b", to: "c@d" } } } }`)).toBe("<file>: notifiers.mail.email.to: expected a list");
    expect(await problem(`{ notifiers: { x: { teams: {} } } }`)).toBe("<file>: notifiers.x: a notifier names exactly one of log, command, webhook, slack, email, pagerduty");
    expect(await problem(`{ alerts: { routes: [{ match: { severity: "high" }, notify: ["log"] }] } }`)).toBe("<file>: alerts.routes[0].match.severity: expected one of critical, error, warning, info");
    expect(await problem(`{ alerts: { routes: [{ match: { pipeline: "sales*" }, notify: ["pd"] }] } }`)).toBe(`<file>: alerts.routes[0].notify: no notifier named "pd" (known: log)`);
    expect(await problem(`{ defaultNotify: ["ops"] }`)).toBe(`<file>: defaultNotify: no notifier named "ops" (known: log)`);
    expect(await problem(`{ alerts: { digest: { after: 0 } } }`)).toBe("<file>: alerts.digest.after: expected a whole number >= 1");
    const project = mkdtempSync(join(dir, "p-"));
    writeFileSync(join(project, "package.json"), ESM);
    writeFileSync(join(project, "idem.config.mjs"), `export default { uiUrl: "https://idem.example.com/", notifiers: { pd: { pagerduty: { routingKeyEnv: "PD_KEY" } } }, alerts: { routes: [{ match: { owner: "finance", severity: ["critical"] }, notify: ["pd"] }], digest: false } };`);
    const config = await loadConfig(project);
    expect(config.uiUrl).toBe("https://idem.example.com");
    expect(config.alerts).toEqual({ routes: [{ match: { owner: "finance", severity: ["critical"] }, notify: ["pd"] }], digest: null, failing: { after: 3, forMs: 600_000 } });
    // On the line of the route that names it.
    const fresh = mkdtempSync(join(dir, "p-"));
    writeFileSync(join(fresh, "package.json"), ESM);
    writeFileSync(join(fresh, "idem.config.mjs"), `export default {\n  alerts: {\n    routes: [\n      { match: { owner: "finance" },\n        notify: ["pager"] },\n    ],\n  },\n};\n`);
    await expect(loadConfig(fresh)).rejects.toThrow(`${join(fresh, "idem.config.mjs")}:5: alerts.routes[0].notify: no notifier named "pager" (known: log)`);
  });

  it("tells a CommonJS project exactly what to change, in one line", async () => {
    write({ "package.json": JSON.stringify({ name: "p", type: "commonjs" }), "idem.config.ts": `export default {};` });
    const error = await loadConfig(dir).catch((e: Error) => e);
    expect((error as Error).message).toBe(`${join(dir, "package.json")}: set "type": "module" in this package.json: idem's config and pipeline files are ES modules (it says "type": "commonjs")`);
  });
});
