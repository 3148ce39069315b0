import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { processHarness, queryState, waitFor } from "../support/processes.ts";

const here = processHarness();

// The pipeline is paused: every due interval of it "did not run", if the watchdog knows of it.
const CONFIG = `import { defineConfig } from "idem";
export default defineConfig({ checkerIntervalMs: 300, didNotRunGraceMs: 1500, reloadMs: 300 });
`;
const EVERY_2S = `import { pipeline, cron } from "idem";
export const late = pipeline("late", { schedule: cron("*/2 * * * * *") }, { t: { run: () => ({}) } });
`;
const MANUAL = `import { pipeline } from "idem";
export const late = pipeline("late", {}, { t: { run: () => ({}) } });
`;

const didNotRun = () => queryState<{ n: number }>(here.project, "SELECT count(*) AS n FROM incidents WHERE kind = 'did_not_run' AND pipeline_id = 'late'")[0]!.n;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** No new "did not run" for a while: the watchdog does not (or no longer) check the pipeline's schedule. */
async function expectQuiet(what: string): Promise<void> {
  await sleep(2_500); // a reload and a pass, and intervals that fired before it past their grace
  const before = didNotRun();
  await sleep(5_000); // two or more due times of a 2-second schedule, each past its grace
  expect(didNotRun(), what).toBe(before);
}

describe("the watchdog sees reloaded pipeline files", () => {
  it("checks a pipeline added while it runs, follows its change, and stops when its file is removed", async () => {
    here.create({
      "idem.config.ts": CONFIG,
      "pipelines/other.ts": `import { pipeline } from "idem";\nexport const other = pipeline("other", {}, { t: { run: () => ({}) } });\n`,
    });
    const worker = here.start("worker");
    await waitFor("the worker's watchdog to check", () => queryState(here.project, "SELECT 1 FROM leases WHERE role = 'checker' AND holder LIKE 'worker %'")[0], 30_000);
    expect(didNotRun()).toBe(0);

    writeFileSync(join(here.project, "pipelines/late.ts"), EVERY_2S);
    const paused = here.cli("pause", "late", "--note", "held");
    expect(paused.status, paused.stderr).toBe(0);
    await waitFor("a did_not_run incident for the added pipeline", () => (didNotRun() > 0 ? true : undefined), 20_000);
    expect(worker.output()).toMatch(/pipeline files reloaded: 2 pipeline\(s\); added late/);

    writeFileSync(join(here.project, "pipelines/late.ts"), MANUAL);
    await waitFor("the change to be reloaded", () => (/changed late/.test(worker.output()) ? true : undefined), 20_000);
    await expectQuiet("a pipeline changed to a manual one is no longer expected to run");

    writeFileSync(join(here.project, "pipelines/late.ts"), EVERY_2S);
    const resumedFrom = didNotRun();
    await waitFor("did_not_run incidents again once it is scheduled again", () => (didNotRun() > resumedFrom ? true : undefined), 20_000);

    rmSync(join(here.project, "pipelines/late.ts"));
    await waitFor("the removal to be reloaded", () => (/removed late/.test(worker.output()) ? true : undefined), 20_000);
    await expectQuiet("a removed pipeline is not checked");
  }, 120_000);
});
