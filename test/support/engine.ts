import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock } from "../../src/core/model/clock.ts";
import type { Pipeline } from "../../src/core/pipeline/types.ts";
import { Engine } from "../../src/engine/engine.ts";
import type { Store } from "../../src/store/port.ts";
import { openTestStore } from "./test-store.ts";

export interface TestEngine {
  engine: Engine;
  store: Store;
  dir: string;
  close(): Promise<void>;
}

/** An engine on a real SQLite file in a temporary folder. */
export async function openTestEngine(pipelines: Pipeline[], clock: Clock, random = () => 0): Promise<TestEngine> {
  const dir = mkdtempSync(join(tmpdir(), "idem-engine-"));
  const { store, close: closeStore } = await openTestStore(dir);
  const engine = new Engine({ store, clock, stateDir: join(dir, ".idem"), pipelines, projectDir: dir, random });
  return {
    engine,
    store,
    dir,
    async close() {
      await closeStore();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
