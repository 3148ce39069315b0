import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const bin = join(resolve(import.meta.dirname, "../.."), "bin/idem.js");
let dir: string;

function idem(cwd: string, ...args: string[]) {
  const result = spawnSync(process.execPath, [bin, ...args], { cwd, encoding: "utf8", timeout: 60_000 });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

function write(files: Record<string, string>) {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "idem-setup-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("setting a project up: bad input gets one line and exit 2", () => {
  it("a folder with no config here or above", () => {
    const { code, err } = idem(dir, "runs", "sales");
    expect(code).toBe(2);
    expect(err).toBe(`idem: no idem.config.ts here or above (${dir}); create a project with \`idem init\`, or give --config <file>\n`);
  });

  it("a CommonJS project: says exactly what to change", () => {
    write({ "package.json": JSON.stringify({ name: "p", type: "commonjs" }), "idem.config.ts": "export default {};\n" });
    const { code, err } = idem(join(dir), "validate");
    expect(code).toBe(2);
    expect(err).toBe(`idem: ${join(dir, "package.json")}: set "type": "module" in this package.json: idem's config and pipeline files are ES modules (it says "type": "commonjs")\n`);
  });

  it("a config with a typo'd key: names the key and the file, from a subfolder too", () => {
    write({ "package.json": JSON.stringify({ type: "module" }), "idem.config.ts": `export default { pipeline: "pipelines", concurrency: 2 as number };\n`, "pipelines/.keep": "" });
    const { code, err } = idem(join(dir, "pipelines"), "validate");
    expect(code).toBe(2);
    expect(err).toBe(`idem: ${join(dir, "idem.config.ts")}: unknown key "pipeline" (did you mean "pipelines"?)\n`);
  });

  it("idem init into a folder that is not empty writes nothing", () => {
    write({ "notes.txt": "mine" });
    const { code, err } = idem(dir, "init");
    expect(code).toBe(2);
    expect(err).toBe(`idem: ${dir} is not empty (notes.txt): idem init makes a project in an empty or new folder; nothing was written\n`);
    expect(readdirSync(dir)).toEqual(["notes.txt"]);
  });

  it("idem init into a new folder creates the project", () => {
    const { code, out } = idem(dir, "init", "fresh");
    expect(code).toBe(0);
    expect(out).toMatch(/^created fresh: package\.json, idem\.config\.ts, pipelines\/hello\.ts/);
    expect(existsSync(join(dir, "fresh/test/hello.test.ts"))).toBe(true);
  });
});
