import { ArgumentError, NotFoundError, UsageError } from "../core/model/errors.ts";
import { isValidId } from "../core/model/ids.ts";
import type { PoolUsage } from "../store/port.ts";
import { defaultActor, tellAudit, type Acting } from "./acting.ts";
import type { EngineContext } from "./engine-context.ts";

/** Pools as an operator sets them: their slots and who holds them, each change audited. */
export class Pools {
  readonly #e: Pick<EngineContext, "store" | "clock">;

  constructor(context: Pick<EngineContext, "store" | "clock">) {
    this.#e = context;
  }

  async list(): Promise<PoolUsage[]> {
    return this.#e.store.listPools();
  }

  async set(name: string, slots: number, request: { description?: string } & Acting): Promise<void> {
    if (!isValidId(name)) throw new UsageError(`invalid pool name ${JSON.stringify(name)}`);
    if (!Number.isInteger(slots) || slots < 0) throw new ArgumentError("slots", (n) => `${n("slots")} ${slots}: expected a whole number >= 0`);
    const { store } = this.#e;
    const at = this.#e.clock.now();
    await store.setPool({ name, slots, description: request.description ?? null, at });
    tellAudit(request, await store.appendAudit({ at, actor: request.actor ?? defaultActor(), action: "pool-set", pipelineId: null, reason: request.reason ?? null, details: { pool: name, slots } }));
  }

  async delete(name: string, request: Acting): Promise<void> {
    const { store } = this.#e;
    if (!(await store.deletePool(name))) throw new NotFoundError("pool", `no pool named "${name}"`);
    tellAudit(request, await store.appendAudit({ at: this.#e.clock.now(), actor: request.actor ?? defaultActor(), action: "pool-delete", pipelineId: null, reason: request.reason ?? null, details: { pool: name } }));
  }
}
