/**
 * The shop demo: load two days, rerun the first, then show what a plain append does on a rerun
 * (the day doubles, the check fails, the run fails) and how a normal rerun repairs it.
 * Run with `npm run demo` from the repository root.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openEngine } from "../../src/cli/project.ts";
import type { RunResult } from "../../src/engine/engine.ts";
import { formatHistory, openDuckDB, readHistory } from "idem/data";

const shopDir = fileURLToPath(new URL(".", import.meta.url));
rmSync(join(shopDir, ".idem"), { recursive: true, force: true });

const engine = await openEngine({ cwd: shopDir, user: "demo" }, { pipelines: true });
try {
  const say = async (result: RunResult, note = "") => {
    const attempts = await engine.attempts(result.run.runId);
    const load = attempts.filter((a) => a.taskId === "load_day").at(-1);
    const check = attempts.filter((a) => a.taskId === "check_day").at(-1);
    const summary = load?.summary as { rows_loaded: number; table_rows: number } | null;
    let line = `run ${result.run.businessDate} loaded ${summary?.rows_loaded} rows, orders_daily has ${summary?.table_rows}`;
    if (check?.state === "failed") line += `; check_day failed: ${check.errorMessage}`;
    console.log(`${line}; run ${result.run.state}${note}`);
  };

  console.log("# load two days, then run the first one again: the table does not change");
  await say(await engine.runForDate("shop_orders", "2026-09-01", { actor: "demo" }));
  await say(await engine.runForDate("shop_orders", "2026-09-02", { actor: "demo" }));
  await say(await engine.runForDate("shop_orders", "2026-09-01", { actor: "demo", reason: "rerun to show idempotency" }));

  console.log("\n# the same rerun as a plain append (--param mode=append): the day doubles");
  await say(
    await engine.runForDate("shop_orders", "2026-09-01", { actor: "demo", params: { mode: "append" }, reason: "show a plain append" }),
    " (append)",
  );

  console.log("\n# a normal rerun repairs the day");
  await say(await engine.runForDate("shop_orders", "2026-09-01", { actor: "demo", reason: "repair after the append" }), " (repaired)");

  console.log("\n# orders_daily's history, newest first: the repair, the append (no predicate), the reruns");
  const warehouse = await openDuckDB(join(shopDir, ".idem", "warehouse.duckdb"));
  try {
    console.log(formatHistory(await readHistory(warehouse, "orders_daily", { limit: 10 })));
  } finally {
    await warehouse.close();
  }

  console.log(`\nstate and logs are in ${join("examples/shop", ".idem")}; try:`);
  console.log("  cd examples/shop && node ../../bin/idem.js runs shop_orders && node ../../bin/idem.js tasks shop_orders@2026-09-01");
} finally {
  await engine.close();
}
