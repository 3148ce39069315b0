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

  it("tells a CommonJS project exactly what to change, in one line", async () => {
    write({ "package.json": JSON.stringify({ name: "p", type: "commonjs" }), "idem.config.ts": `export default {};` });
    const error = await loadConfig(dir).catch((e: Error) => e);
    expect((error as Error).message).toBe(`${join(dir, "package.json")}: set "type": "module" in this package.json: idem's config and pipeline files are ES modules (it says "type": "commonjs")`);
  });
});
