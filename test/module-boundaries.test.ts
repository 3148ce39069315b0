import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "..");

/** Every `.ts` file under `folder` (repository-relative). */
function sourceFiles(folder: string): string[] {
  return readdirSync(join(repo, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => relative(repo, join(entry.parentPath, entry.name)));
}

/**
 * The repository files a module's text names: static imports and re-exports (type-only ones
 * too: a reader follows those as well) and dynamic `import()`.
 */
function importsIn(text: string, file: string): string[] {
  const pattern = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}\/[^"']+)["']/gm;
  return [...text.matchAll(pattern)].map(([, specifier]) => relative(repo, join(repo, dirname(file), specifier!)));
}

/** Imports from files under `from` of files under `into`, as "importer -> imported". */
function importsAcross(from: string, into: string): string[] {
  return sourceFiles(from).flatMap((file) =>
    importsIn(readFileSync(join(repo, file), "utf8"), file)
      .filter((target) => target === into || target.startsWith(`${into}/`))
      .map((target) => `${file} -> ${target}`),
  );
}

describe("the engine's module boundaries", () => {
  it("the executor (one attempt) imports neither the worker (the claiming loop) nor the engine", () => {
    expect(importsAcross("src/engine/executor", "src/engine/worker")).toEqual([]);
    expect(importsAcross("src/engine/executor", "src/engine/engine.ts")).toEqual([]);
  });

  it("the worker uses the executor: the graph between them is one-way, not empty", () => {
    expect(importsAcross("src/engine/worker", "src/engine/executor").length).toBeGreaterThan(0);
  });

  it("sees static, type-only, re-exported and dynamic imports alike", () => {
    const text = [
      'import { a } from "../worker/a.ts";',
      'import type { B } from "../worker/b.ts";',
      'export { c } from "../worker/c.ts";',
      'const { d } = await import("../worker/d.ts");',
      'import "../worker/e.ts";',
      'import { f } from "node:fs";',
    ].join("\n");
    expect(importsIn(text, "src/engine/executor/x.ts")).toEqual(["a", "b", "c", "d", "e"].map((n) => `src/engine/worker/${n}.ts`));
  });
});
