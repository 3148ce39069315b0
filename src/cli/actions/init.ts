import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "../../core/model/errors.ts";
import type { Cli } from "../lazy.ts";

/** idem's own folder and package.json: the version a new project depends on, and the tools it pins. */
function idemPackage(): { dir: string; version: string; dependencies: Record<string, string>; devDependencies: Record<string, string> } {
  // src/cli/actions/ here, dist/src/cli/actions/ once built: the nearest package.json above is idem's.
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return { dir, ...JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) };
    if (dirname(dir) === dir) throw new Error("idem's package.json is missing");
  }
}

/** The files init writes besides package.json, which it adopts when there is one. */
const WRITTEN = ["idem.config.ts", "pipelines/hello.ts", "test/hello.test.ts", "tsconfig.json"];

export function init(cli: Cli, dir: string | undefined) {
  const target = resolve(cli.global.cwd ?? process.cwd(), dir ?? ".");
  const present = WRITTEN.filter((name) => existsSync(join(target, name)));
  if (present.length > 0) {
    throw new UsageError(`${target} already has ${present.join(", ")}: idem init never overwrites a file; nothing was written`);
  }
  const manifestPath = join(target, "package.json");
  let existing: Record<string, unknown> | null = null;
  if (existsSync(manifestPath)) {
    try {
      existing = JSON.parse(readFileSync(manifestPath, "utf8")) as Record<string, unknown>;
    } catch (error) {
      throw new UsageError(`${manifestPath} is not valid JSON (${(error as Error).message}): nothing was written`);
    }
    if (!existing || typeof existing !== "object" || Array.isArray(existing)) throw new UsageError(`${manifestPath} is not a JSON object: nothing was written`);
  }
  const idem = idemPackage();
  const adopted = adoptManifest(existing ?? { name: packageName(basename(target)), private: true }, {
    idem: dependencySpec(idem, target),
    tsx: idem.dependencies.tsx!,
    typescript: idem.devDependencies.typescript!,
    typesNode: idem.devDependencies["@types/node"]!,
  });
  // The example's first day is yesterday: a day whose interval has ended, which a manual run may run today.
  const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
  const files = projectFiles(yesterday);
  mkdirSync(target, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(target, name, ".."), { recursive: true });
    writeFileSync(join(target, name), text, { flag: "wx" }); // never over a file that appeared meanwhile
  }
  const gitignore = join(target, ".gitignore");
  const ignored = existsSync(gitignore) ? readFileSync(gitignore, "utf8") : "";
  const missing = ["node_modules/", ".idem/"].filter((line) => !ignored.split("\n").some((l) => l.trim() === line || l.trim() === line.slice(0, -1)));
  if (missing.length) writeFileSync(gitignore, (ignored && !ignored.endsWith("\n") ? "\n" : "") + missing.join("\n") + "\n", { flag: "a" });
  writeFileSync(manifestPath, JSON.stringify(adopted.manifest, null, 2) + "\n");

  const where = relative(process.cwd(), target) || ".";
  const written = [...(existing ? [] : ["package.json"]), ...Object.keys(files), ...(missing.length && ignored === "" ? [".gitignore"] : [])];
  console.log(`created ${where}: ${written.join(", ")}`);
  if (missing.length && ignored !== "") console.log(`.gitignore: added ${missing.join(", ")}`);
  if (existing) for (const change of adopted.changes) console.log(`package.json: ${change}`);
  const cd = where === "." ? "" : `cd ${where} && `;
  console.log(`next: ${cd}npm install && npx idem validate && npx idem run hello --date ${yesterday}`);
  console.log("      npm test runs the example's unit test, npm run typecheck its types; npx idem dev runs the schedule");
}

interface Pins {
  idem: string;
  tsx: string;
  typescript: string;
  typesNode: string;
}

/**
 * Adds to a package.json what an idem project needs, saying each change in one line, and never
 * overwrites a value the user set, but one: "type" must be "module", and init says it changed it.
 */
export function adoptManifest(manifest: Record<string, unknown>, pins: Pins): { manifest: Record<string, unknown>; changes: string[] } {
  const result: Record<string, unknown> = { ...manifest };
  const changes: string[] = [];
  if (result.type === undefined) {
    result.type = "module";
    changes.push('set "type": "module" (idem\'s config and pipeline files are ES modules)');
  } else if (result.type !== "module") {
    changes.push(`changed "type" from ${JSON.stringify(result.type)} to "module": idem's config and pipeline files are ES modules, which it requires`);
    result.type = "module";
  }
  const section = (name: "dependencies" | "devDependencies" | "scripts", entries: Record<string, string>, what: (key: string) => string) => {
    const current = result[name];
    const map: Record<string, unknown> = current && typeof current === "object" && !Array.isArray(current) ? { ...(current as Record<string, unknown>) } : {};
    for (const [key, value] of Object.entries(entries)) {
      if (map[key] === undefined) {
        map[key] = value;
        changes.push(`added ${what(key)}: ${value}`);
      } else if (name === "scripts" && key === "test" && NPM_PLACEHOLDER_TEST.test(String(map[key]))) {
        map[key] = value;
        changes.push(`replaced npm's placeholder test script with: ${value}`);
      } else if (map[key] !== value) {
        changes.push(`kept your ${what(key)}: ${String(map[key])} (idem's would be: ${value})`);
      }
    }
    result[name] = map;
  };
  section("scripts", { validate: "idem validate", test: "node --import tsx --test test/hello.test.ts", typecheck: "tsc --noEmit" }, (key) => `script "${key}"`);
  section("dependencies", { idem: pins.idem }, (key) => `dependency ${key}`);
  section("devDependencies", { tsx: pins.tsx, typescript: pins.typescript, "@types/node": pins.typesNode }, (key) => `dev dependency ${key}`);
  return { manifest: result, changes };
}

/** What `npm init -y` writes as the test script: a placeholder, not a value the user chose. */
const NPM_PLACEHOLDER_TEST = /^echo "Error: no test specified" && exit 1$/;

/**
 * The dependency on idem that resolves from the new project: the spec of the idem running init.
 * Run from a checkout (not inside a node_modules), `file:` that checkout; installed in a project
 * (npx included), what that project was given: a `file:` spec (a tarball, a folder) is pointed at
 * the same file from the new project, anything else (a registry) is the installed version.
 */
export function dependencySpec(idem: { dir: string; version: string }, target: string): string {
  const fromTarget = (path: string) => `file:${relative(target, path) || "."}`;
  const parts = idem.dir.split(sep);
  const nodeModules = parts.lastIndexOf("node_modules");
  if (nodeModules === -1) return fromTarget(idem.dir);
  const prefix = parts.slice(0, nodeModules).join(sep) || sep;
  const installedAs = installedSpec(prefix);
  if (installedAs?.startsWith("file:")) return fromTarget(resolve(prefix, installedAs.slice("file:".length)));
  return `^${idem.version}`;
}

/** How the project at `prefix` got idem: its lockfile's `resolved`, else its package.json's spec. */
function installedSpec(prefix: string): string | null {
  for (const lock of [join(prefix, "node_modules", ".package-lock.json"), join(prefix, "package-lock.json")]) {
    try {
      const resolved = (JSON.parse(readFileSync(lock, "utf8")) as { packages?: Record<string, { resolved?: string }> }).packages?.["node_modules/idem"]?.resolved;
      if (resolved) return resolved;
    } catch {
      // no lockfile there
    }
  }
  try {
    const manifest = JSON.parse(readFileSync(join(prefix, "package.json"), "utf8")) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
    return manifest.dependencies?.idem ?? manifest.devDependencies?.idem ?? null;
  } catch {
    return null;
  }
}

function packageName(folder: string): string {
  const name = folder.toLowerCase().replace(/[^a-z0-9-._~]+/g, "-").replace(/^[-._]+|[-._]+$/g, "");
  return name || "idem-project";
}

function projectFiles(firstDay: string): Record<string, string> {
  return {
    "idem.config.ts": `import type { IdemConfig } from "idem";

// Paths are relative to this file. Commands find it from any folder below.
export default {
  // state (runs, attempts, audit), logs and caches; git-ignored
  stateDir: ".idem",
  // every .ts file here that exports a pipeline
  pipelines: "pipelines",
} satisfies IdemConfig;
`,
    "pipelines/hello.ts": `import { daily, pipeline, type TaskContext } from "idem";

export interface HelloParams extends Record<string, unknown> {
  greeting: string;
}

/**
 * A function task. It works on the run's business date (the interval's day), never on "today",
 * so a retry, a rerun next week and a backfill all do the same thing. It returns a small summary.
 */
export async function greet(ctx: TaskContext<HelloParams>) {
  ctx.log.info(\`greeting \${ctx.businessDate}\`);
  return { greeting: \`\${ctx.params.greeting} \${ctx.businessDate}\`, weekday: ctx.interval.start.dayOfWeek };
}

export const hello = pipeline(
  "hello",
  {
    // The interval is the calendar day in UTC; its run starts the next day at 06:00.
    schedule: daily({ at: "06:00", timezone: "UTC" }),
    start: "${firstDay}",
    // Every task is retried twice, 30 s then 60 s apart, and stopped after 10 minutes.
    defaults: { retries: 2, retryDelay: "30s", backoff: "exponential", timeout: "10m" },
    params: { greeting: "hello" },
  },
  {
    greet: { run: greet },
    // A command task: argv, no shell; it gets the business date in IDEM_BUSINESS_DATE.
    report: {
      after: ["greet"],
      retries: 3,
      command: ["node", "-e", "console.log('report for ' + process.env.IDEM_BUSINESS_DATE)"],
    },
  },
);
`,
    "test/hello.test.ts": `import assert from "node:assert/strict";
import { test } from "node:test";
import { runTask } from "idem/testing";
import { greet } from "../pipelines/hello.ts";

test("greet names the business date it was given", async () => {
  const { summary } = await runTask(greet, { businessDate: "2026-09-01", params: { greeting: "hello" } });
  assert.deepEqual(summary, { greeting: "hello 2026-09-01", weekday: 2 });
});
`,
    "tsconfig.json": JSON.stringify(
      {
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noEmit: true,
          allowImportingTsExtensions: true,
          skipLibCheck: true,
          // node:test, node:assert and the like are typed by @types/node (a dev dependency)
          types: ["node"],
        },
        include: ["idem.config.ts", "pipelines", "test"],
      },
      null,
      2,
    ) + "\n",
  };
}
