import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
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
    const created = sh("npx", ["--no", "idem", "init", "shop"], root);
    expect(created.err).toBe("");
    expect(created.out).toMatch(/^created shop: package\.json, idem\.config\.ts, pipelines\/hello\.ts, test\/hello\.test\.ts, tsconfig\.json, \.gitignore\n/);
    const project = join(root, "shop");
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8"));
    // run from the tarball installed in the folder above: the new project depends on that same tarball
    expect(manifest).toMatchObject({ type: "module", dependencies: { idem: `file:../${basename(tarball)}` } });
    expect(readFileSync(join(project, ".gitignore"), "utf8")).toContain(".idem/");

    // from a subfolder: the config is found above
    const validated = sh(idem, ["validate"], join(project, "pipelines"));
    expect(validated.err).toBe("");
    expect(validated.out).toMatch(/ok: 1 pipeline\(s\)/);
    expect(validated.out).toMatch(/hello\s+2 task\(s\)\s+daily at 06:00 UTC/);

    const today = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10); // yesterday: its interval has ended
    const ran = sh(idem, ["run", "hello", "--date", today], project);
    expect(ran.err).toBe("");
    expect(ran.code).toBe(0);
    expect(ran.out).toMatch(/greet\s+try 1\s+success/);
    expect(ran.out).toMatch(/report\s+try 1\s+success/);
    expect(sh(idem, ["logs", `hello@${today}`, "report"], project).out).toBe(`report for ${today}\n`);

    const unit = sh(process.execPath, ["--import", "tsx", "--test", "test/hello.test.ts"], project);
    expect(unit.code, unit.out + unit.err).toBe(0);
    expect(unit.out).toMatch(/# pass 1/);

    // SQL tasks on a named DuckDB connection, in the task host of the installed package; a
    // function task reads what the load reported (ctx.upstream) and the table (ctx.connection)
    writeFileSync(join(project, "idem.config.ts"), `import type { IdemConfig } from "idem";
export default { connections: { warehouse: { duckdb: ".idem/warehouse.duckdb" } } } satisfies IdemConfig;
`);
    writeFileSync(join(project, "pipelines/sales.ts"), `import { manual, pipeline, type SummaryOf, type TaskContext } from "idem";
import { sql } from "idem/data";
export async function compare(ctx: TaskContext<{}, { load: { rowsAffected: number } }>) {
  const warehouse = await ctx.connection("warehouse");
  const [row] = await warehouse.query(sql\`SELECT count(*)::INTEGER AS n FROM sales WHERE day = CAST(\${ctx.businessDate} AS DATE)\`);
  return { inTable: Number(row!.n), reported: ctx.upstream.load?.rowsAffected ?? null };
}
export type CompareSummary = SummaryOf<typeof compare>;
export const sales = pipeline("sales", { schedule: manual(), start: "2026-09-01" }, {
  setup: { sql: "CREATE TABLE IF NOT EXISTS sales (day DATE, n INTEGER)", connection: "warehouse" },
  load: { after: ["setup"], connection: "warehouse", sql: "DELETE FROM sales WHERE day = CAST($business_date AS DATE); INSERT INTO sales SELECT CAST($business_date AS DATE), i FROM range(4) t(i)" },
  compare: { after: ["load"], run: compare },
});
`);
    const sold = sh(idem, ["run", "sales", "--date", "2026-09-01"], project);
    expect(sold.err).toBe("");
    expect(sold.code).toBe(0);
    const tasks = JSON.parse(sh(idem, ["tasks", "sales@2026-09-01", "--json"], project).out) as { taskId: string; lastAttempt: { summary: unknown } }[];
    expect(Object.fromEntries(tasks.map((t) => [t.taskId, t.lastAttempt.summary]))).toMatchObject({
      load: { rowsAffected: 4, statements: 2 },
      compare: { inTable: 4, reported: 4 },
    });

    // the types resolve through `exports` as an editor would see them
    const tsc = sh(process.execPath, [join(repo, "node_modules/typescript/bin/tsc"), "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--skipLibCheck", "idem.config.ts", "pipelines/hello.ts", "pipelines/sales.ts"], project);
    expect(tsc.out + tsc.err).toBe("");
    expect(existsSync(join(project, ".idem/state.db"))).toBe(true);
  });

  it("follows the README's install section line by line, from a folder npm init -y made", () => {
    const readme = readFileSync(join(repo, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Install and set up a project"), readme.indexOf("## The demo"));
    const lines = /```sh\n([\s\S]*?)```/.exec(section)![1]!.trim().split("\n");
    expect(lines[0]).toBe("mkdir my-pipelines && cd my-pipelines");
    const home = join(root, "readme");
    mkdirSync(home);
    // What differs from a user's machine, in the environment only: the tarball's path, npm kept
    // offline where its cache allows and without install scripts (better-sqlite3's addon is
    // copied from this repository's install after each npm install, as in the install above).
    const env = {
      ...process.env, NO_COLOR: "1", IDEM_USER: "tester", IDEM_TGZ: tarball,
      npm_config_ignore_scripts: "true", npm_config_prefer_offline: "true", npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false",
    };
    let cwd = home;
    const outputs: string[] = [];
    for (const line of lines) {
      const result = spawnSync("sh", ["-ec", `${line}\necho "@@cwd=$(pwd)"`], { cwd, encoding: "utf8", timeout: 240_000, env });
      expect(result.status, `${line}\n${result.stdout}${result.stderr}`).toBe(0);
      const out = result.stdout;
      cwd = /@@cwd=(.*)\n$/.exec(out)![1]!;
      outputs.push(out.replace(/@@cwd=.*\n$/, ""));
      if (/^npm install\b/.test(line)) cpSync(join(repo, "node_modules/better-sqlite3/build"), join(cwd, "node_modules/better-sqlite3/build"), { recursive: true });
    }
    const said = (prefix: string) => outputs[lines.findIndex((l) => l.startsWith(prefix))]!;
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    expect(said("npx idem init")).toMatch(/^created \.: idem\.config\.ts, pipelines\/hello\.ts, test\/hello\.test\.ts, tsconfig\.json, \.gitignore\n/);
    expect(said("npx idem init")).toMatch(/^package\.json: (set "type": "module"|changed "type" from "commonjs" to "module")/m);
    expect(said("npx idem init")).toContain("package.json: replaced npm's placeholder test script with: node --import tsx --test test/hello.test.ts\n");
    expect(said("npx idem init")).toContain('package.json: added script "typecheck": tsc --noEmit\n');
    expect(said("npx idem init")).toMatch(/^package\.json: added dev dependency @types\/node: /m);
    expect(said("npx idem init")).toContain(`npx idem run hello --date ${yesterday}\n`);
    const manifest = JSON.parse(readFileSync(join(cwd, "package.json"), "utf8"));
    expect(manifest).toMatchObject({ type: "module", dependencies: { idem: expect.stringMatching(/^file:.*idem-.*\.tgz$/) } });
    expect(said("npx idem validate")).toMatch(/^ok: 1 pipeline\(s\)/);
    expect(said("npx idem validate")).toContain("types are not checked here: npm run typecheck checks them\n");
    expect(said("npx idem run hello")).toMatch(/greet\s+try 1\s+success/);
    expect(said("npx idem run hello")).toMatch(/report\s+try 1\s+success/);
    expect(said("npm test")).toMatch(/# pass 1/);
    expect(existsSync(join(cwd, `.idem/state.db`))).toBe(true);
  }, 600_000);
});
