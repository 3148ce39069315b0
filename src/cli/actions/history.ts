import { relative, resolve } from "node:path";
import { UsageError } from "../../core/model/errors.ts";
import { fileHistoryPath, formatFileHistory, hasFileHistory, readFileHistory } from "../../data/files/file-history.ts";
import { formatHistory, readHistory } from "../../data/history.ts";
import { openTarget } from "../../data/open-target.ts";
import { printJson } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { loadProjectConfig } from "../project.ts";

interface HistoryFlags {
  warehouse?: string;
  limit: number;
  json?: boolean;
}

/**
 * A file dataset (a directory swapPartition writes, found from here or from the project's
 * directory, where tasks run) shows its `history.jsonl`; any other name is a warehouse table.
 */
export async function history(cli: Cli, name: string, flags: HistoryFlags) {
  const cwd = cli.global.cwd ?? process.cwd();
  if (hasFileHistory(resolve(cwd, name))) return printFileHistory(resolve(cwd, name), name, flags);
  const config = flags.warehouse ? null : await loadProjectConfig(cli.global);
  if (config && hasFileHistory(resolve(config.rootDir, name))) return printFileHistory(resolve(config.rootDir, name), name, flags);
  const location = flags.warehouse ?? config?.warehouse;
  if (!location) {
    const where = relative(cwd, fileHistoryPath(resolve(cwd, name))) || fileHistoryPath(resolve(cwd, name));
    throw new UsageError(`which warehouse holds ${name}? give --warehouse duckdb:<path>, or set \`warehouse\` in idem.config.ts (${name} is no file dataset: there is no ${where})`);
  }
  const target = await openTarget(location);
  try {
    const entries = await readHistory(target, name, { limit: flags.limit });
    if (flags.json) printJson(entries);
    else console.log(entries.length ? formatHistory(entries) : `no writes recorded for ${name}`);
  } finally {
    await target.close();
  }
}

async function printFileHistory(root: string, name: string, flags: HistoryFlags) {
  const entries = await readFileHistory(root, { limit: flags.limit });
  if (flags.json) printJson(entries);
  else console.log(entries.length ? formatFileHistory(entries) : `no writes recorded for ${name}`);
}
