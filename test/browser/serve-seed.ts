/**
 * Serves the seeded store of the UI tests on 127.0.0.1 for a person to look at:
 * `node bin/run-ts.js test/browser/serve-seed.ts [port]`. Ctrl-C removes the store.
 */
import { seedStore } from "../support/ui-seed.ts";
import { startUiServer } from "../support/ui-server.ts";

const seeded = await seedStore();
const server = await startUiServer(seeded.engine, Number(process.argv[2] ?? 0));
console.log(`${server.url}/ui`);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, async () => {
    await server.close();
    await seeded.close();
    process.exit(0);
  });
}
