import { UsageError } from "../../core/model/errors.ts";
import { formatHistory, readHistory } from "../../data/history.ts";
import { openTarget } from "../../data/open-target.ts";
import { printJson } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { loadProjectConfig } from "../project.ts";

export async function history(cli: Cli, table: string, flags: { warehouse?: string; limit: number; json?: boolean }) {
  const location = flags.warehouse ?? (await loadProjectConfig(cli.global)).warehouse;
  if (!location) throw new UsageError("which warehouse? give --warehouse duckdb:<path>, or set `warehouse` in idem.config.ts");
  const limit = flags.limit;
  const target = await openTarget(location);
  try {
    const entries = await readHistory(target, table, { limit });
    if (flags.json) printJson(entries);
    else console.log(entries.length ? formatHistory(entries) : `no writes recorded for ${table}`);
  } finally {
    await target.close();
  }
}
