import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { sparkSubmitJob } from "../../src/engine/external-jobs/spark-submit.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

/**
 * Spark cannot be installed here, so a fake `spark-submit` on PATH stands in for a standalone
 * cluster in cluster mode: it answers a submit with a driver id (as spark-submit does), a
 * `--status` with the REST answer's `driverState`, and a `--kill` by marking the driver KILLED;
 * the driver's state is a file the test writes. Each call's argv is logged.
 */
const FAKE = `#!/bin/sh
dir="$(dirname "$0")/drivers"
mkdir -p "$dir"
echo "$*" >> "$(dirname "$0")/calls"
while [ $# -gt 0 ]; do
  case "$1" in
    --status) echo '{ "action" : "SubmissionStatusResponse", "driverState" : "'"$(cat "$dir/$2")"'", "success" : true }'; exit 0 ;;
    --kill) echo KILLED > "$dir/$2"; echo '{ "action" : "KillSubmissionResponse", "success" : true }'; exit 0 ;;
    --name) name="$2"; shift ;;
  esac
  shift
done
id="driver-$(ls "$dir" | grep -vc '[.]name$')"
echo SUBMITTED > "$dir/$id"
echo "$name" > "$dir/$id.name"
echo "Driver successfully submitted as $id" >&2
`;

let h: ScheduleHarness | undefined;
let bin = "";
afterEach(async () => {
  await h?.close();
  h = undefined;
  rmSync(bin, { recursive: true, force: true });
});

function fakeSpark() {
  bin = mkdtempSync(join(tmpdir(), "idem-fake-spark-"));
  writeFileSync(join(bin, "spark-submit"), FAKE);
  chmodSync(join(bin, "spark-submit"), 0o755);
  mkdirSync(join(bin, "drivers"));
  return {
    job: sparkSubmitJob({
      master: "spark://127.0.0.1:7077",
      application: (ctx) => ["--class", "com.example.Etl", "/jars/etl.jar", ctx.businessDate],
      conf: { "spark.executor.memory": "2g" },
      env: { PATH: `${bin}:${process.env.PATH}` },
    }),
    drivers: () => readdirSync(join(bin, "drivers")).filter((f) => !f.endsWith(".name")).sort(),
    set: (id: string, state: string) => writeFileSync(join(bin, "drivers", id), `${state}\n`),
    state: (id: string) => readFileSync(join(bin, "drivers", id), "utf8").trim(),
    name: (id: string) => readFileSync(join(bin, "drivers", `${id}.name`), "utf8").trim(),
    calls: () => readFileSync(join(bin, "calls"), "utf8").trim().split("\n"),
  };
}

const london = () => daily({ at: "02:00", timezone: "Europe/London" });

describe("the spark-submit adapter (a fake spark-submit on PATH)", () => {
  it("submits in cluster mode under the key as the application's name, polls --status, and succeeds when the driver finishes", async () => {
    const spark = fakeSpark();
    const p = pipeline("spark", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      etl: { external: spark.job, pollInterval: "5m", pollBackoff: false },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    expect(spark.drivers()).toEqual(["driver-0"]);
    const [job] = await h.store.listExternalJobs("spark@2026-09-01");
    expect(spark.name("driver-0")).toBe(job!.key);
    expect(spark.calls()[0]).toBe(`--master spark://127.0.0.1:7077 --deploy-mode cluster --name ${job!.key} --conf spark.executor.memory=2g --class com.example.Etl /jars/etl.jar 2026-09-01`);
    spark.set("driver-0", "RUNNING");
    await h.at("2026-09-02T01:05:00Z");
    spark.set("driver-0", "FINISHED");
    await h.at("2026-09-02T01:10:00Z");
    expect((await h.runs("spark"))[0]!.state).toBe("success");
    expect((await h.store.listAttempts("spark@2026-09-01", "etl")).at(-1)!.summary).toMatchObject({ sparkSubmission: "driver-0", driverState: "FINISHED" });
  });

  it("kills the driver with --kill on a timeout, and fails on a driver that ended FAILED", async () => {
    const spark = fakeSpark();
    const p = pipeline("spark", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      etl: { external: spark.job, pollInterval: "10m", pollBackoff: false, timeout: "10m", retries: 1, retryDelay: 0 },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    await h.at("2026-09-02T01:10:00Z");
    expect(spark.state("driver-0")).toBe("KILLED");
    expect(spark.calls()).toContain("--master spark://127.0.0.1:7077 --kill driver-0");
    expect(spark.drivers()).toEqual(["driver-0", "driver-1"]);
    spark.set("driver-1", "FAILED");
    await h.at("2026-09-02T01:20:00Z");
    expect((await h.store.listAttempts("spark@2026-09-01", "etl")).at(-1)).toMatchObject({ state: "failed", errorMessage: 'spark-submit job "driver-1" failed: Spark driver driver-1 ended FAILED' });
  });
});
