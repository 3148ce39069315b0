import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * idem as a user gets it: `npm pack` (of dist/ as `npm test` just built it), the tarball
 * installed into an empty folder outside this repository, then `idem init` and the commands a
 * new project runs first. Installed offline from the npm cache when it can be, with the
 * registry otherwise; without install scripts (they would compile better-sqlite3 for minutes):
 * its addon is copied from this repository's install, which is the same pinned version.
 */
const repo = resolve(import.meta.dirname, "../..");
let root: string;
let tarball: string;
let files: string[];

function sh(command: string, args: string[], cwd: string) {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", timeout: 240_000, env: { ...process.env, NO_COLOR: "1", IDEM_USER: "tester" } });
  return { code: result.status, out: result.stdout ?? "", err: result.stderr ?? "" };
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "idem-pack-"));
  const packed = execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", root], { cwd: repo, encoding: "utf8" });
  const [info] = JSON.parse(packed) as { filename: string; files: { path: string }[] }[];
  tarball = join(root, info!.filename);
  files = info!.files.map((f) => f.path);
  const install = (mode: string) => sh("npm", ["install", mode, "--ignore-scripts", "--no-audit", "--no-fund", "--no-package-lock", tarball], root);
  writeFileSync(join(root, "package.json"), JSON.stringify({ name: "user", private: true, type: "module" }));
  let result = install("--offline");
  if (result.code !== 0 && /ENOTCACHED/.test(result.err)) result = install("--prefer-offline");
  if (result.code !== 0) throw new Error(`npm install of the tarball failed: ${result.err}`);
  cpSync(join(repo, "node_modules/better-sqlite3/build"), join(root, "node_modules/better-sqlite3/build"), { recursive: true });
}, 300_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the packed package", () => {
  it("ships the compiled code, its types, the CLI and the docs, and nothing of the repository's own", () => {
    expect(files).toContain("dist/src/index.js");
    expect(files).toContain("dist/src/index.d.ts");
    expect(files).toContain("dist/src/data/index.d.ts");
    expect(files).toContain("dist/src/testing.d.ts");
    expect(files).toContain("bin/idem.js");
    // the web UI's static assets are served from src/http/ui/assets at run time
    expect(files.filter((f) => !f.startsWith("src/http/ui/assets/")).filter((f) => /^(src|test|examples|bench|\.ci|dist\/(test|bench|examples))\//.test(f) || f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
  });

  it("imports from plain Node: idem, idem/data, idem/testing", () => {
    const script = `const [a, b, c] = await Promise.all([import("idem"), import("idem/data"), import("idem/testing")]);
console.log(typeof a.pipeline, typeof a.daily, typeof b.replaceWhere, typeof b.openDuckDB, typeof c.runTask);`;
    const result = sh(process.execPath, ["--input-type=module", "-e", script], root);
    expect(result.err).toBe("");
    expect(result.out.trim()).toBe("function function function function function");
  });

  it("makes a project with idem init that validates, runs, and whose unit test passes", () => {
    const idem = join(root, "node_modules/.bin/idem");
    const created = sh(idem, ["init", "shop"], root);
    expect(created.err).toBe("");
    expect(created.out).toMatch(/^created shop: package\.json, idem\.config\.ts, pipelines\/hello\.ts, test\/hello\.test\.ts, \.gitignore, tsconfig\.json/);
    const project = join(root, "shop");
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8"));
    expect(manifest).toMatchObject({ type: "module", dependencies: { idem: expect.stringMatching(/^\^\d+\.\d+\.\d+/) } });
    expect(readFileSync(join(project, ".gitignore"), "utf8")).toContain(".idem/");

    // from a subfolder: the config is found above
    const validated = sh(idem, ["validate"], join(project, "pipelines"));
    expect(validated.err).toBe("");
    expect(validated.out).toMatch(/ok: 1 pipeline\(s\)/);
    expect(validated.out).toMatch(/hello\s+2 task\(s\)\s+daily at 06:00 UTC/);

    const today = new Date().toISOString().slice(0, 10);
    const ran = sh(idem, ["run", "hello", "--date", today], project);
    expect(ran.err).toBe("");
    expect(ran.code).toBe(0);
    expect(ran.out).toMatch(/greet\s+try 1\s+success/);
    expect(ran.out).toMatch(/report\s+try 1\s+success/);
    expect(sh(idem, ["logs", `hello@${today}`, "report"], project).out).toBe(`report for ${today}\n`);

    const unit = sh(process.execPath, ["--import", "tsx", "--test", "test/hello.test.ts"], project);
    expect(unit.code, unit.out + unit.err).toBe(0);
    expect(unit.out).toMatch(/# pass 1/);

    // the types resolve through `exports` as an editor would see them
    const tsc = sh(process.execPath, [join(repo, "node_modules/typescript/bin/tsc"), "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--skipLibCheck", "idem.config.ts", "pipelines/hello.ts"], project);
    expect(tsc.out + tsc.err).toBe("");
    expect(existsSync(join(project, ".idem/state.db"))).toBe(true);
  });
});
