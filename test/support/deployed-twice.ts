import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { openProject } from "../../src/engine/compose.ts";
import type { Engine } from "../../src/engine/engine.ts";
import { loadConfig } from "../../src/engine/project/config.ts";
import { makeProject, removeProject } from "./processes.ts";

/** Version 1: two function tasks. Version 2: load is a command, report is gone, publish is new. */
export const V1 = `import { pipeline } from "idem";
import { CODE } from "../lib/version.ts";
// first deploy: <script>alert("x")</script> & co
export const pinned = pipeline("pinned", {}, {
  load: { run: () => ({ code: CODE }) },
  report: { after: ["load"], run: () => ({ code: CODE }) },
});
`;
export const V2 = `import { pipeline } from "idem";
import { CODE } from "../lib/version.ts";
// second deploy
export const pinned = pipeline("pinned", {}, {
  load: { command: ["true"] },
  publish: { after: ["load"], run: () => ({ code: CODE }) },
});
`;

/**
 * A project whose pipeline had a run created on version 1 (left queued: no worker runs it), then
 * was deployed as version 2 and had another; what to undo goes on `cleanups`.
 */
export async function deployedTwice(cleanups: (() => Promise<void> | void)[]): Promise<{ engine: Engine; v1: string; v2: string }> {
  const project = makeProject({ "idem.config.ts": `export default {};\n`, "lib/version.ts": `export const CODE = "v1";\n`, "pipelines/pinned.ts": V1 });
  cleanups.push(() => removeProject(project));
  const engine = await openProject(await loadConfig(project), { pipelines: true });
  cleanups.push(() => engine.close());
  const first = await engine.trigger("pinned", "2026-09-01", { reason: "old code", actor: "ana" });
  writeFileSync(join(project, "lib/version.ts"), `export const CODE = "v2";\n`);
  writeFileSync(join(project, "pipelines/pinned.ts"), V2);
  await engine.catalog.refresh();
  const second = await engine.trigger("pinned", "2026-09-02", { reason: "new code", actor: "bo" });
  expect(first.codeVersion).toMatch(/^[0-9a-f]{20}$/);
  expect(second.codeVersion).not.toBe(first.codeVersion);
  return { engine, v1: first.codeVersion!, v2: second.codeVersion! };
}
