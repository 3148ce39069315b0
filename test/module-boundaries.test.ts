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

  it("the surfaces never build the scheduler, a worker or the store: the engine does, from the config", () => {
    for (const surface of ["src/cli", "src/http"]) {
      for (const part of ["src/engine/scheduler/scheduler.ts", "src/engine/worker/worker.ts", "src/engine/worker/wakeup.ts", "src/store/open-store.ts"]) {
        expect(importsAcross(surface, part), `${surface} -> ${part}`).toEqual([]);
      }
    }
  });

  it("the surfaces call the engine, never a store: of the store they know only the port's records (and its list of alert states)", () => {
    for (const surface of ["src/cli", "src/http"]) {
      expect(importsAcross(surface, "src/store").filter((edge) => !edge.endsWith(" -> src/store/port.ts")), surface).toEqual([]);
    }
  });

  it("core imports nothing above it, not even a type; the data plane never imports the engine, a store or a surface", () => {
    for (const above of ["src/data", "src/store", "src/engine", "src/cli", "src/http"]) expect(importsAcross("src/core", above), `src/core -> ${above}`).toEqual([]);
    for (const above of ["src/store", "src/engine", "src/cli", "src/http"]) expect(importsAcross("src/data", above), `src/data -> ${above}`).toEqual([]);
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

/** Each file's imports of other repository files, over every `.ts` file under `folder`. */
function importGraph(folder: string): Map<string, string[]> {
  return new Map(sourceFiles(folder).map((file) => [file, importsIn(readFileSync(join(repo, file), "utf8"), file)]));
}

/** The cycles of a graph, each as one loop "a -> b -> a" (one per strongly connected part). */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) visit(next);
      if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, low.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const part: string[] = [];
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      onStack.delete(member);
      part.push(member);
      if (member === node) break;
    }
    if (part.length > 1 || graph.get(node)!.includes(node)) cycles.push(`${part.sort().join(" <-> ")}`);
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return cycles;
}

/** The folder directly under `root` that holds `file`, or null for a file at `root` itself. */
function folderUnder(root: string, file: string): string | null {
  const rest = relative(root, file).split("/");
  return rest.length > 1 ? `${root}/${rest[0]}` : null;
}

describe("no import cycles", () => {
  it("no source file imports itself back through others (type-only and dynamic imports count)", () => {
    expect(cyclesOf(importGraph("src"))).toEqual([]);
  });

  it("the engine's folders import one another one way, and none imports the engine's top-level files (engine.ts, compose, processes), which build on them", () => {
    const folders = new Map<string, Set<string>>();
    const upward: string[] = [];
    for (const [file, imports] of importGraph("src/engine")) {
      const from = folderUnder("src/engine", file);
      if (from === null) continue;
      const edges = folders.get(from) ?? folders.set(from, new Set()).get(from)!;
      for (const target of imports.filter((t) => t.startsWith("src/engine/"))) {
        const into = folderUnder("src/engine", target);
        if (into === null) upward.push(`${file} -> ${target}`);
        else if (into !== from) edges.add(into);
      }
    }
    expect(upward).toEqual([]);
    expect(cyclesOf(new Map([...folders].map(([folder, into]) => [folder, [...into]])))).toEqual([]);
  });

  it("finds a cycle of three and a file importing itself, and none in a one-way graph", () => {
    expect(cyclesOf(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]))).toEqual(["a <-> b <-> c"]);
    expect(cyclesOf(new Map([["a", ["a"]]]))).toEqual(["a"]);
    expect(cyclesOf(new Map([["a", ["b", "c"]], ["b", ["c"]], ["c", []]]))).toEqual([]);
  });
});

describe("one place decides what a store's refusal means", () => {
  it("no engine file but records/store-refusals.ts names StoreConflictError: the others write through it", () => {
    const naming = sourceFiles("src/engine").filter((file) => /\bStoreConflictError\b/.test(readFileSync(join(repo, file), "utf8")));
    expect(naming).toEqual(["src/engine/records/store-refusals.ts"]);
  });
});

describe("the engine speaks its own words", () => {
  /** Code lines (not comments, not SQL comments) naming a CLI flag (` --max-active-runs`) or command (`idem pools`). */
  const surfaceWords = (folder: string) =>
    // The external job adapters run other programs (sbatch, scontrol, spark-submit) with their own flags, not idem's.
    sourceFiles(folder).filter((file) => !file.startsWith("src/engine/external-jobs/")).flatMap((file) =>
      readFileSync(join(repo, file), "utf8")
        .split("\n")
        .map((line, index) => ({ line: line.trim(), at: `${file}:${index + 1}` }))
        .filter(({ line }) => !/^(\/\/|\/?\*|--)/.test(line))
        .filter(({ line }) => /(^|[\s("'`])--[a-z][a-z-]*[a-z](?![a-z=-])|\bidem (init|run|scheduler|worker|dev|serve|pools|clear|skip|mark|tokens|backfill|trigger|migrate|validate)\b/.test(line))
        .filter(({ line }) => !/execArgv|"--import"/.test(line))
        .map(({ at, line }) => `${at}: ${line}`),
    );

  it("no message of core, the store, the data plane or the engine names a flag or a command: the CLI translates", () => {
    for (const layer of ["src/core", "src/store", "src/data", "src/engine"]) expect(surfaceWords(layer), layer).toEqual([]);
  });
});
