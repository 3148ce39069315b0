import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "../../core/model/errors.ts";
import type { Cli } from "../lazy.ts";

/** idem's own package.json: the version a new project depends on, and the tsx it runs tests with. */
function idemPackage(): { version: string; dependencies: Record<string, string> } {
  // src/cli/actions/ here, dist/src/cli/actions/ once built: the nearest package.json above is idem's.
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    if (dirname(dir) === dir) throw new Error("idem's package.json is missing");
  }
}

export function init(cli: Cli, dir: string | undefined) {
  const target = resolve(cli.global.cwd ?? process.cwd(), dir ?? ".");
  if (existsSync(target)) {
    const present = readdirSync(target).filter((name) => name !== ".git");
    if (present.length > 0) {
      const shown = present.slice(0, 4).join(", ") + (present.length > 4 ? ", ..." : "");
      throw new UsageError(`${target} is not empty (${shown}): idem init makes a project in an empty or new folder; nothing was written`);
    }
  }
  const today = new Date().toISOString().slice(0, 10);
  const files = projectFiles(packageName(basename(target)), today);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(target, name, ".."), { recursive: true });
    writeFileSync(join(target, name), text, { flag: "wx" }); // never over a file that appeared meanwhile
  }
  const where = relative(process.cwd(), target) || ".";
  console.log(`created ${where}: ${Object.keys(files).join(", ")}`);
  const cd = where === "." ? "" : `cd ${where} && `;
  console.log(`next: ${cd}npm install && npx idem validate && npx idem run hello --date ${today}`);
  console.log("      npm test runs the example's unit test; npx idem dev runs the schedule");
}

function packageName(folder: string): string {
  const name = folder.toLowerCase().replace(/[^a-z0-9-._~]+/g, "-").replace(/^[-._]+|[-._]+$/g, "");
  return name || "idem-project";
}

function projectFiles(name: string, today: string): Record<string, string> {
  const idem = idemPackage();
  return {
    "package.json": JSON.stringify(
      {
        name,
        private: true,
        type: "module",
        scripts: { validate: "idem validate", test: "node --import tsx --test test/hello.test.ts" },
        dependencies: { idem: `^${idem.version}` },
        devDependencies: { tsx: idem.dependencies.tsx },
      },
      null,
      2,
    ) + "\n",
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
    start: "${today}",
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
    ".gitignore": "node_modules/\n.idem/\n",
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
        },
        include: ["idem.config.ts", "pipelines", "test"],
      },
      null,
      2,
    ) + "\n",
  };
}
