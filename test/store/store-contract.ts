import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/port.ts";
import { attemptsContract } from "./contract/attempts.ts";
import { auditContract } from "./contract/audit.ts";
import { backfillsContract } from "./contract/backfills.ts";
import { changesContract } from "./contract/changes.ts";
import { datasetsContract } from "./contract/datasets.ts";
import { externalJobsContract } from "./contract/external-jobs.ts";
import { finishAndClaimContract } from "./contract/finish-and-claim.ts";
import { freshnessContract } from "./contract/freshness.ts";
import { contractHarness, portRoles, recording, storeRoles } from "./contract/harness.ts";
import { historyContract } from "./contract/history.ts";
import { mappingContract } from "./contract/mapping.ts";
import { metricsContract } from "./contract/metrics.ts";
import { poolsContract } from "./contract/pools.ts";
import { runsContract } from "./contract/runs.ts";
import { schedulingContract } from "./contract/scheduling.ts";
import { tokensContract } from "./contract/tokens.ts";
import { watermarksContract } from "./contract/watermarks.ts";
import { workersContract } from "./contract/workers.ts";

export interface ContractOptions {
  /** The adapter has channels of its own for wake-ups and changes (PostgreSQL's LISTEN/NOTIFY). */
  channels: boolean;
}

/**
 * The behaviour every state store adapter must have, one block per role of the port (the files
 * under `contract/`, named like the role interfaces under `src/store/port/`). Each adapter's
 * test file calls this with a factory for a fresh, empty store; nothing here knows which
 * database is behind it. The last test fails when a role's block leaves one of its methods out.
 */
export function describeStoreContract(adapter: string, openStore: () => Promise<Store>, closeStore: ((s: Store) => Promise<void>) | undefined, options: ContractOptions) {
  describe(`${adapter} store contract`, () => {
    const roles = portRoles();
    const seen = new Set<string>();
    let raw: Store;
    let store: Store;
    beforeEach(async () => {
      raw = await openStore();
      await raw.migrate();
      store = recording(raw, roles, seen);
    });
    afterEach(async () => {
      await (closeStore ? closeStore(raw) : raw.close());
    });

    const h = contractHarness(() => store, options.channels);
    runsContract(h);
    attemptsContract(h);
    workersContract(h);
    schedulingContract(h);
    datasetsContract(h);
    poolsContract(h);
    backfillsContract(h);
    freshnessContract(h);
    watermarksContract(h);
    auditContract(h);
    tokensContract(h);
    changesContract(h);
    historyContract(h);
    metricsContract(h);
    finishAndClaimContract(h);
    mappingContract(h);
    externalJobsContract(h);

    it("calls every method of each role of the port in that role's block", () => {
      const uncalled = [...roles].flatMap(([role, methods]) => methods.filter((m) => !seen.has(`${role}.${m}`)).map((m) => `${role}.${m}`));
      expect(uncalled).toEqual([]);
      // Every role the Store is composed of has its block here, and nothing else is in the Store.
      expect([...roles.keys()].sort()).toEqual(storeRoles().sort());
    });
  });
}
