import type { Engine } from "../../src/engine/engine.ts";
import { startServer, type RunningServer } from "../../src/http/server.ts";

/** The local OS user the seeded UI acts as (loopback, no token): the audit log names them. */
export const UI_LOCAL_USER = "oncall-alice";

/** The whole HTTP app (API and UI) as `idem serve` starts it, on 127.0.0.1 and a free port. */
export async function startUiServer(engine: Engine, port = 0): Promise<RunningServer> {
  return startServer(engine, { host: "127.0.0.1", port, localUser: UI_LOCAL_USER });
}
