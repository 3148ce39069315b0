import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { importTypeScript } from "../../src/engine/project/typescript-cache.ts";

const repo = resolve(import.meta.dirname, "../..");
let dir: string;

function write(files: Record<string, string>) {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

const compiled = (name: string) => join(dir, ".idem/cache/ts/project", `${name}.mjs`);

beforeEach(() => {
  mkdirSync(join(repo, ".tmp"), { recursive: true });
  dir = mkdtempSync(join(repo, ".tmp", "tscache-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("importing the user's TypeScript from compiled copies", () => {
  it("follows relative imports in every spelling and keeps import.meta of the original", async () => {
    write({
      "pipelines/a.ts": `import { b } from "../lib/b.ts";\nimport { c } from "../lib/c.js";\nimport { d } from "../lib/d";\nimport data from "../lib/e.json" with { type: "json" };\nexport const answer: string = [b, c, d, data.e].join(",");\nexport const where = import.meta.url;\nexport const folder = import.meta.dirname;\n`,
      "lib/b.ts": `export const b: string = "b";`,
      "lib/c.ts": `export const c = "c" as const;`,
      "lib/d/index.ts": `export const d = "d";`,
      "lib/e.json": `{ "e": "e" }`,
    });
    const module = await importTypeScript(join(dir, "pipelines/a.ts"), dir);
    expect(module.answer).toBe("b,c,d,e");
    expect(module.where).toBe(pathToFileURL(join(dir, "pipelines/a.ts")).href);
    expect(module.folder).toBe(join(dir, "pipelines"));
    expect(readFileSync(compiled("pipelines/a.ts"), "utf8")).toContain(`from "../lib/b.ts.mjs"`);
  });

  it("compiles a file again only when its content changes", async () => {
    write({ "x.ts": `export const n: number = 1;` });
    await importTypeScript(join(dir, "x.ts"), dir);
    const first = statSync(compiled("x.ts")).mtimeMs;
    await new Promise((r) => setTimeout(r, 20));
    await importTypeScript(join(dir, "x.ts"), dir);
    expect(statSync(compiled("x.ts")).mtimeMs).toBe(first);
    write({ "x.ts": `export const n: number = 2;` });
    await importTypeScript(join(dir, "x.ts"), dir);
    expect(readFileSync(compiled("x.ts"), "utf8")).toContain("= 2");
  });

  it("recompiles an imported file that changed, though the importer did not", async () => {
    write({ "top.ts": `export { v } from "./dep.ts";`, "dep.ts": `export const v = "old";` });
    await importTypeScript(join(dir, "top.ts"), dir);
    write({ "dep.ts": `export const v = "new";` });
    await importTypeScript(join(dir, "top.ts"), dir);
    expect(readFileSync(compiled("dep.ts"), "utf8")).toContain(`"new"`);
  });

  it("reports a compile error with the file and line, as the pipeline loader expects", async () => {
    write({ "bad.ts": `export const a = 1;\nexport const b = ;\n` });
    await expect(importTypeScript(join(dir, "bad.ts"), dir)).rejects.toThrow(new RegExp(`bad\\.ts:2:\\d+: ERROR: Unexpected`));
  });

  it("points a runtime error's stack at the original file and line", async () => {
    write({ "boom.ts": `const x: number = 1;\n\nthrow new Error("boom " + x);\n` });
    const error = await importTypeScript(join(dir, "boom.ts"), dir).catch((e: Error) => e);
    expect((error as Error).stack).toMatch(/boom\.ts:3:\d+/);
  });
});
