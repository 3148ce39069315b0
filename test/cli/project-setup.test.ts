import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
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
    expect(err).toBe(`idem: ${join(dir, "idem.config.ts")}:1: unknown key "pipeline" (did you mean "pipelines"?)\n`);
  });

  it("idem init where one of its files exists writes nothing", () => {
    write({ "notes.txt": "mine", "idem.config.ts": "export default {};\n" });
    const { code, err } = idem(dir, "init");
    expect(code).toBe(2);
    expect(err).toBe(`idem: ${dir} already has idem.config.ts: idem init never overwrites a file; nothing was written\n`);
    expect(readdirSync(dir).sort()).toEqual(["idem.config.ts", "notes.txt"]);
  });

  it("idem init adopts the package.json npm init -y wrote: adds what is missing, keeps what the user set, says each change", () => {
    write({
      "package.json": JSON.stringify({ name: "mine", version: "1.0.0", main: "index.js", type: "commonjs", scripts: { test: 'echo "Error: no test specified" && exit 1', typecheck: "tsc -p ." }, license: "ISC" }),
      ".gitignore": "dist",
    });
    const { code, out, err } = idem(dir, "init");
    expect([code, err]).toEqual([0, ""]);
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    const spec = `file:${relative(dir, resolve(import.meta.dirname, "../.."))}`;
    expect(manifest).toEqual({
      name: "mine", version: "1.0.0", main: "index.js", type: "module", license: "ISC",
      scripts: { test: "node --import tsx --test test/hello.test.ts", typecheck: "tsc -p .", validate: "idem validate" },
      dependencies: { idem: spec },
      devDependencies: { tsx: expect.any(String), typescript: expect.any(String), "@types/node": expect.any(String) },
    });
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    expect(out.split("\n")).toEqual([
      "created .: idem.config.ts, pipelines/hello.ts, test/hello.test.ts, tsconfig.json",
      ".gitignore: added node_modules/, .idem/",
      'package.json: changed "type" from "commonjs" to "module": idem\'s config and pipeline files are ES modules, which it requires',
      'package.json: added script "validate": idem validate',
      "package.json: replaced npm's placeholder test script with: node --import tsx --test test/hello.test.ts",
      'package.json: kept your script "typecheck": tsc -p . (idem\'s would be: tsc --noEmit)',
      `package.json: added dependency idem: ${spec}`,
      `package.json: added dev dependency tsx: ${manifest.devDependencies.tsx}`,
      `package.json: added dev dependency typescript: ${manifest.devDependencies.typescript}`,
      `package.json: added dev dependency @types/node: ${manifest.devDependencies["@types/node"]}`,
      `next: npm install && npx idem validate && npx idem run hello --date ${yesterday}`,
      "      npm test runs the example's unit test, npm run typecheck its types; npx idem dev runs the schedule",
      "",
    ]);
    expect(readFileSync(join(dir, ".gitignore"), "utf8")).toBe("dist\nnode_modules/\n.idem/\n");
    expect(readFileSync(join(dir, "pipelines/hello.ts"), "utf8")).toContain(`start: "${yesterday}"`);
    expect(JSON.parse(readFileSync(join(dir, "tsconfig.json"), "utf8")).compilerOptions.types).toEqual(["node"]);
  });

  it("idem init into a new folder creates the project", () => {
    const { code, out } = idem(dir, "init", "fresh");
    expect(code).toBe(0);
    expect(out).toMatch(/^created fresh: package\.json, idem\.config\.ts, pipelines\/hello\.ts/);
    expect(existsSync(join(dir, "fresh/test/hello.test.ts"))).toBe(true);
  });
});
