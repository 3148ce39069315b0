import type { BackfillItem } from "../store/port.ts";
import type { Engine } from "./engine.ts";

/** A backfill's plan, date by date, with whether each one has started (the web UI's progress per date). */
export async function backfillItemsOf(engine: Engine, backfillId: string): Promise<BackfillItem[]> {
  await engine.backfillStatus(backfillId);
  return engine.store.backfillItems(backfillId);
}
