import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repo = resolve(import.meta.dirname, "../..");
const bin = join(repo, "bin/idem.js");
let project: string;

function idem(...args: string[]) {
  const result = spawnSync(process.execPath, [bin, ...args], { cwd: project, encoding: "utf8", env: { ...process.env, NO_COLOR: "1", IDEM_USER: "tester" }, timeout: 60_000 });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

// Line numbers matter here: each problem is reported on the line of the key it is about.
const ORDERS = `import { daily, pipeline } from "idem";

export const orders = pipeline("orders", {
  schedule: daily({ at: "02:00", timezone: "UTC" }),
  retries: 2,
  params: { region: "eu" },
}, {
  load: {
    run: () => ({ rows: 1 }),
    retry: 3,
    pool: "warehous",
  },
  check: {
    after: ["load"],
    run: () => {},
    sensorTimeout: "1h",
  },
});

export const refunds = pipeline("refunds", { schedule: "0 3 * * *", catchup: "sometimes" as never }, {
  load: { run: () => {}, pool: "warehouse" },
  notify: { after: ["lod" as never], run: () => {} },
});
`;

const tasks = `import { pipeline } from "idem";

const steps = {
  extract: { command: ["true"] },
  // a SQL task whose connection the config lacks
  publish: {
    after: ["extract"],
    sql: "SELECT 1",
    connection: "warehose",
    timeout: "10 minutes",
  },
} as const;

export const listed = pipeline("listed", { schedule: "manual", defaults: { retires: 1 } as never }, [
  { id: "a", run: () => {} },
  {
    id: "b",
    run: () => {},
    pokeInterval: "1m",
  },
] as never);

export const named = pipeline("named", {}, steps);
`;

const promised = `import { daily, pipeline } from "idem";

export const promised = pipeline("promised", {
  schedule: daily({ at: "02:00", timezone: "UTC" }),
  promises: [{ dataset: "sales", deadline: "D+1 06:00",
    notify: ["log", "opps"] }],
}, {
  load: { run: () => {}, publishes: "sales" },
});
`;

beforeAll(() => {
  mkdirSync(join(repo, ".tmp"), { recursive: true });
  project = mkdtempSync(join(repo, ".tmp", "validate-"));
  const files = {
    "idem.config.ts": `export default { pipelines: "pipelines", pools: { warehouse: 2 }, connections: { warehouse: { duckdb: ":memory:" } }, notifiers: { ops: { log: true } } };\n`,
    "pipelines/orders.ts": ORDERS,
    "pipelines/tasks.ts": tasks,
    "pipelines/promised.ts": promised,
  };
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(project, name, ".."), { recursive: true });
    writeFileSync(join(project, name), text);
  }
});
afterAll(() => rmSync(project, { recursive: true, force: true }));

describe("idem validate", () => {
  it("reports every problem of every file at once, each on the line of its key, and exits 2", () => {
    const { code, out, err } = idem("validate");
    expect(out).toBe("");
    expect(err.trim().split("\n")).toEqual([
      "idem: pipelines/orders.ts:5: pipeline orders: `retries` is a task option, not a pipeline option: set it on each task or in `defaults`",
      'idem: pipelines/orders.ts:10: pipeline orders, task load: unknown task option `retry` (did you mean "retries"?)',
      'idem: pipelines/orders.ts:11: pipeline orders, task load: pool "warehous" is not declared in the config (pools: warehouse) (did you mean "warehouse"?)',
      "idem: pipelines/orders.ts:16: pipeline orders, task check: `sensorTimeout` is an option of sensor tasks, and this is a function task (`run`)",
      'idem: pipelines/orders.ts:20: pipeline refunds: catchup must be "all" or "latest", not "sometimes"',
      'idem: pipelines/orders.ts:22: pipeline refunds, task notify: depends on unknown task "lod"',
      'idem: pipelines/promised.ts:6: pipeline promised: promise for sales: notifier "opps" is not declared in the config (notifiers: log, ops) (did you mean "ops"?)',
      'idem: pipelines/tasks.ts:9: pipeline named, task publish: unknown connection "warehose" (connections: warehouse) (did you mean "warehouse"?)',
      expect.stringMatching(/^idem: pipelines\/tasks\.ts:10: pipeline named, task publish: bad timeout "10 minutes"/),
      'idem: pipelines/tasks.ts:14: pipeline listed: `defaults` takes task policies only (retries, retryDelay, backoff, maxRetryDelay, jitter, timeout, triggerRule, pool, slots, priority), not `retires` (did you mean "retries"?)',
      "idem: pipelines/tasks.ts:19: pipeline listed, task b: `pokeInterval` is an option of sensor tasks, and this is a function task (`run`)",
    ]);
    expect(code).toBe(2);
  });
});
