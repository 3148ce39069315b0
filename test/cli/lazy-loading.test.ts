import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "../..");

/**
 * Everything a module loads before its first line runs: its static value imports, followed
 * through the repository's files (type-only imports and dynamic `import()` are not followed).
 */
function staticGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(join(repo, file), "utf8");
    const pattern = /^\s*(?:import|export)\s+(?!type\s)(?:[^;]*?\s+from\s+)?["']([^"']+)["']/gm;
    for (const [, specifier] of text.matchAll(pattern)) {
      if (specifier!.startsWith(".")) visit(relative(repo, join(repo, dirname(file), specifier!)));
      else if (!specifier!.startsWith("node:")) packages.add(specifier!.startsWith("@") ? specifier!.split("/").slice(0, 2).join("/") : specifier!.split("/")[0]!);
    }
  };
  visit(entry);
  return { files, packages };
}

const HEAVY = ["@duckdb/node-api", "pg", "tsx"];

describe("what a command loads", () => {
  it("idem --help loads commander and the command declarations, nothing else", () => {
    const { files, packages } = staticGraph("src/cli/main.ts");
    expect([...packages]).toEqual(["commander"]);
    const outside = [...files].filter((f) => !/^src\/cli\/(main|lazy|flags|commands\/[a-z-]+)\.ts$/.test(f) && f !== "src/core/model/errors.ts");
    expect(outside).toEqual([]);
  });

  it("commands of the control plane load no driver, no tsx, no data-plane loader", () => {
    for (const action of ["inspect", "operate", "freshness", "backfill"]) {
      const { files, packages } = staticGraph(`src/cli/actions/${action}.ts`);
      expect([...packages].filter((p) => HEAVY.includes(p) || p === "better-sqlite3"), action).toEqual([]);
      expect([...files].filter((f) => /^src\/data\/(targets|loaders|files)\//.test(f)), action).toEqual([]);
      expect([...files].filter((f) => f.startsWith("src/store/") && !f.startsWith("src/store/port/") && !["src/store/port.ts", "src/store/open-store.ts", "src/store/location.ts"].includes(f)), action).toEqual([]);
    }
  });

  it("the long-running commands load the metrics library only once /metrics is served", () => {
    for (const entry of ["src/cli/actions/daemon.ts", "src/cli/actions/daemons.ts", "src/cli/actions/serve.ts", "src/http/server.ts", "src/engine/engine.ts"]) {
      expect([...staticGraph(entry).packages], entry).not.toContain("prom-client");
    }
    expect([...staticGraph("src/engine/metrics/prometheus.ts").packages]).toContain("prom-client");
  });

  it("pino loads only in a long-running process that logs JSON: nothing imports it statically but the process log", () => {
    for (const entry of ["src/cli/actions/daemon.ts", "src/cli/actions/daemons.ts", "src/cli/actions/serve.ts", "src/cli/actions/run.ts", "src/engine/engine.ts", "src/http/server.ts"]) {
      expect([...staticGraph(entry).packages], entry).not.toContain("pino");
    }
    expect(readFileSync(join(repo, "src/engine/logging/process-log.ts"), "utf8")).toMatch(/await import\("pino"\)/);
  });

  it("OpenTelemetry loads only with the first span, and spans are written only while an OTLP endpoint is set", () => {
    const otel = (entry: string) => [...staticGraph(entry).packages].filter((p) => p.startsWith("@opentelemetry/"));
    for (const entry of ["src/cli/actions/run.ts", "src/cli/actions/daemon.ts", "src/cli/actions/daemons.ts", "src/cli/actions/serve.ts", "src/engine/engine.ts", "src/engine/tracing/run-traces.ts", "src/engine/task-host/host-main.ts", "src/engine/executor/execute-attempt.ts"]) {
      expect(otel(entry), entry).toEqual([]);
    }
    expect(otel("src/engine/tracing/otel-export.ts")).toContain("@opentelemetry/sdk-trace-base");
    // The one dynamic import of it, behind the first span; and the engine subscribes only when tracing is on.
    const importers = [...staticGraph("src/engine/engine.ts").files].filter((f) => /import\(["']\.\/otel-export\.ts["']\)/.test(readFileSync(join(repo, f), "utf8")));
    expect(importers).toEqual(["src/engine/tracing/run-traces.ts"]);
    expect(readFileSync(join(repo, "src/engine/engine.ts"), "utf8")).toMatch(/tracingEnabled\(process\.env\) \? new RunTraces/);
  });

  it("the data plane's opener loads only the driver a location names", () => {
    const { packages } = staticGraph("src/cli/actions/history.ts");
    expect([...packages].filter((p) => HEAVY.includes(p) || p === "better-sqlite3")).toEqual([]);
  });
});

describe("what importing idem loads", () => {
  it("idem/data loads no database driver until a target is opened", () => {
    const { packages } = staticGraph("src/data/index.ts");
    expect([...packages].filter((p) => HEAVY.includes(p) || p === "better-sqlite3")).toEqual([]);
  });

  it("reading the config needs no schema library and no TypeScript loader", () => {
    const { packages } = staticGraph("src/engine/project/config.ts");
    expect([...packages]).toEqual(["temporal-polyfill"]);
    expect([...staticGraph("src/engine/project/typescript-cache.ts").packages]).toEqual([]);
  });
});
