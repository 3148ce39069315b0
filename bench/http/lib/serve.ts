/**
 * Shared by the HTTP benchmarks: an idem server over a given store, on 127.0.0.1, with one
 * operator token, as `idem serve` builds it.
 */
import { randomBytes } from "node:crypto";
import { pipeline } from "../../../src/core/pipeline/define.ts";
import { daily } from "../../../src/core/time/index.ts";
import { systemClock } from "../../../src/core/model/clock.ts";
import { Engine } from "../../../src/engine/engine.ts";
import { startServer, type RunningServer } from "../../../src/http/server.ts";
import type { Store } from "../../../src/store/port.ts";

export const PIPELINE = pipeline(
  "bench",
  { schedule: daily({ at: "02:00", timezone: "UTC" }), start: "1700-01-01" },
  { load: { run: () => ({ rows: 1 }) } },
);

export interface BenchServer {
  engine: Engine;
  server: RunningServer;
  token: string;
  close(): Promise<void>;
}

export async function benchServer(store: Store, stateDir: string): Promise<BenchServer> {
  const engine = new Engine({ store, clock: systemClock, stateDir, pipelines: [PIPELINE] });
  const { secret } = await engine.createToken({ name: `bench_${randomBytes(3).toString("hex")}`, role: "operator", actor: "bench" });
  const server = await startServer(engine, { host: "127.0.0.1", port: 0, localUser: "bench" });
  return {
    engine,
    server,
    token: secret,
    async close() {
      await engine.changeFeed().close();
      await server.close();
    },
  };
}

export function percentile(sorted: number[], q: number): number {
  return +sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(3);
}

/** Stops a benchmark that runs away, so `npm run bench` always ends. */
export function bound(seconds: number, name: string): void {
  setTimeout(() => {
    console.log(JSON.stringify({ bench: name, error: `did not finish within ${seconds} s` }));
    process.exit(1);
  }, seconds * 1000).unref();
}
