import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DefinitionError } from "../../core/model/errors.ts";
import { printJson } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { loadProject } from "../project.ts";

export async function validate(cli: Cli, options: { json?: boolean }) {
  const { config, pipelines } = await loadProject(cli.global);
  // The variables notifiers name must be set where alerts are sent: say so before a process starts.
  const { missingNotifierVariable } = await import("../../engine/freshness/notifiers/index.ts");
  const missing = missingNotifierVariable(config.notifiers, process.env);
  if (missing) throw new DefinitionError(missing, { file: config.file ?? "idem.config.ts" });
  if (options.json) {
    return printJson(pipelines.map((p) => ({ id: p.id, version: p.version, schedule: p.schedule.describe(), tasks: [...p.tasks.keys()], restate: p.restate })));
  }
  console.log(`ok: ${pipelines.length} pipeline(s) in ${config.pipelinePaths.join(", ")}`);
  for (const p of pipelines) {
    console.log(`  ${p.id}  ${p.tasks.size} task(s)  ${p.schedule.describe()}  version ${p.version}`);
    if (p.restate) {
      const out = [...p.tasks.values()].filter((t) => !t.restate).map((t) => t.id);
      console.log(`    restates the last ${p.restate.last} interval(s) after each scheduled one${out.length ? ` (not: ${out.join(", ")})` : ""}; idem next shows the cost`);
    }
  }
  console.log(`types are not checked here: ${typecheckCommand(config.rootDir)} checks them`);
}

/** The project's own type check: its `typecheck` script (idem init writes one), else tsc. */
function typecheckCommand(rootDir: string): string {
  try {
    const manifest = JSON.parse(readFileSync(join(rootDir, "package.json"), "utf8")) as { scripts?: Record<string, unknown> };
    if (typeof manifest.scripts?.typecheck === "string") return "npm run typecheck";
  } catch {
    // no package.json, or not JSON: the config check says so where it matters
  }
  return "npx tsc --noEmit";
}
