/**
 * Idempotency proven by killing: every loader, on every target, is killed with SIGKILL at each
 * step of its write and then run again. The result must equal one clean run, and a reader
 * polling during the kill must only ever see the old contents or the new, never a missing day,
 * a mix, or a temporary file.
 */
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { cleanTempDirs, tempDir } from "./targets.ts";
import { freshSchema, postgresUrl } from "./pg.ts";
import { appendWithoutBatchId, deleteThenInsert, scenarios, writeInputs, type Kind, type Scenario, type ScenarioEnv } from "./fixtures/crash-scenarios.ts";

const CHILD = fileURLToPath(new URL("./fixtures/crash-child.ts", import.meta.url));
const CHILD_TIMEOUT_MS = 60_000;
const pgServer = postgresUrl();
const schemas: string[] = [];
let inputs: string;

beforeAll(() => {
  inputs = tempDir();
  writeInputs(inputs);
});

afterAll(async () => {
  cleanTempDirs();
  if (pgServer.url && schemas.length > 0) {
    const client = new pg.Client({ connectionString: pgServer.url });
    await client.connect();
    for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    await client.end();
  }
});

function freshEnv(kind: Kind): ScenarioEnv {
  if (kind === "postgres") {
    const schema = freshSchema("t_crash");
    schemas.push(schema);
    return { kind, location: schema, inputs, pgUrl: pgServer.url! };
  }
  const location = tempDir();
  mkdirSync(location, { recursive: true });
  return { kind, location, inputs };
}

interface ChildExit {
  signal: NodeJS.Signals | null;
  code: number | null;
  output: string;
}

function runChild(scenario: Scenario, env: ScenarioEnv, crashAt: string): Promise<ChildExit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD], {
      env: { ...process.env, IDEM_CRASH_ENV: JSON.stringify(env), IDEM_CRASH_SCENARIO: scenario.name, IDEM_CRASH_AT: crashAt },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += String(d)));
    child.stderr.on("data", (d) => (output += String(d)));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${scenario.name} on ${env.kind}: child still running after ${CHILD_TIMEOUT_MS} ms (crash at ${crashAt})\n${output}`));
    }, CHILD_TIMEOUT_MS);
    child.on("error", reject);
    // "close", not "exit": exit can come before the last of the child's output has been read.
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, output });
    });
  });
}

/** Reads the target over and over until stopped; returns every distinct thing it saw. */
function pollReader(scenario: Scenario, env: ScenarioEnv) {
  const seen = new Set<string>();
  let stopped = false;
  let reads = 0;
  const loop = (async () => {
    while (!stopped) {
      seen.add(await scenario.signature(env));
      reads++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { seen, reads };
    },
  };
}

const canPoll = (kind: Kind) => kind !== "duckdb"; // DuckDB lets one process open a file at a time.

for (const scenario of scenarios.filter((s) => s !== appendWithoutBatchId && s !== deleteThenInsert)) {
  for (const kind of scenario.kinds) {
    const skip = kind === "postgres" && !pgServer.url;
    describe.skipIf(skip).concurrent(`${scenario.name} on ${kind}, killed at each step`, () => {
      let before = "";
      let after = "";
      let finalState = "";
      const state = (env: ScenarioEnv) => (scenario.state ?? scenario.signature)(env);

      beforeAll(async () => {
        const env = freshEnv(kind);
        await scenario.seed(env);
        before = await scenario.signature(env);
        await scenario.run(env);
        after = await scenario.signature(env);
        finalState = await state(env);
        expect(after).not.toBe(before);
      }, 60_000);

      for (const point of scenario.crashPoints(kind)) {
        it(`killed at ${point}, then run again, leaves what one clean run leaves`, async () => {
          const env = freshEnv(kind);
          await scenario.seed(env);
          const reader = canPoll(kind) ? pollReader(scenario, env) : null;
          const exit = await runChild(scenario, env, point);
          const polled = await reader?.stop();

          expect(exit.signal, `child output:\n${exit.output}`).toBe("SIGKILL");
          if (reader) expect(polled!.reads).toBeGreaterThan(0);
          expect(exit.output).toContain(`crashing at ${point.split(":")[0]}`);
          const afterKill = await scenario.signature(env);
          expect([before, after]).toContain(afterKill);
          for (const seen of polled?.seen ?? []) expect([before, after], "a reader saw neither the old nor the new contents").toContain(seen);

          await scenario.run(env);
          expect(await state(env)).toBe(finalState);
        }, 90_000);
      }
    });
  }
}

describe("the harness itself", () => {
  it("catches a loader that is not idempotent: a plain append killed after its commit writes twice", async () => {
    const clean = freshEnv("sqlite");
    await appendWithoutBatchId.seed(clean);
    await appendWithoutBatchId.run(clean);
    const once = await appendWithoutBatchId.signature(clean);

    const env = freshEnv("sqlite");
    await appendWithoutBatchId.seed(env);
    const exit = await runChild(appendWithoutBatchId, env, "committed");
    expect(exit.signal).toBe("SIGKILL");
    await appendWithoutBatchId.run(env);
    expect(await appendWithoutBatchId.signature(env)).not.toBe(once);
  }, 60_000);

  it("catches a write that is not atomic: a delete committed before the insert leaves the day missing", async () => {
    const env = freshEnv("sqlite");
    await deleteThenInsert.seed(env);
    const before = await deleteThenInsert.signature(env);
    const clean = freshEnv("sqlite");
    await deleteThenInsert.seed(clean);
    await deleteThenInsert.run(clean);
    const after = await deleteThenInsert.signature(clean);
    const exit = await runChild(deleteThenInsert, env, "deleted");
    expect(exit.signal).toBe("SIGKILL");
    expect([before, after]).not.toContain(await deleteThenInsert.signature(env));
  }, 60_000);
});
