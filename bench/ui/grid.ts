/**
 * The web UI's grid page for 365 business dates x 10 tasks, over the seeded store of the browser
 * tests (a year of runs with failures, retries, a missing day): server time per request, bytes
 * on the wire (gzip, as a browser asks), and time to first paint in Chromium with a cold cache.
 * Prints one JSON line. Targets: under 50 KiB compressed, first paint under 1 s.
 */
import { request } from "node:http";
import { loadavg, cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { launchChromium } from "../../test/support/chromium.ts";
import { LAST_DUE_DATE, WAREHOUSE, seedStore } from "../../test/support/ui-seed.ts";
import { startUiServer } from "../../test/support/ui-server.ts";
import { addDays } from "../../src/core/time/dates.ts";
import { timetableFromJSON } from "../../src/core/time/timetable.ts";
import { expectedRuns } from "../../src/engine/scheduler/ledger.ts";

const ROUNDS = 30;
const PAINTS = 7;

function get(url: string): Promise<{ ms: number; wireBytes: number; encoding: string | undefined; status: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(url, { headers: { "accept-encoding": "gzip, deflate, br" } }, (res) => {
      let wireBytes = 0;
      res.on("data", (chunk: Buffer) => (wireBytes += chunk.length));
      res.on("end", () => resolve({ ms: performance.now() - started, wireBytes, encoding: res.headers["content-encoding"], status: res.statusCode ?? 0 }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};
const round = (n: number) => Math.round(n * 10) / 10;

const seeded = await seedStore();
const server = await startUiServer(seeded.engine);
const path = `/ui/pipelines/${WAREHOUSE}/grid?days=365&to=${LAST_DUE_DATE}`;
try {
  const first = await get(server.url + path);
  if (first.status !== 200) throw new Error(`GET ${path}: ${first.status}`);
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) times.push((await get(server.url + path)).ms);
  const html = await get(server.url + path);

  // The ledger behind the grid (366 intervals), interleaved: a schedule seen for the first time
  // (each interval and fire time computed in the zone) against the same schedule again (cached).
  const pipeline = seeded.engine.pipeline(WAREHOUSE);
  const window = { from: pipeline.schedule.intervalForDate(addDays(LAST_DUE_DATE, -364)).start, to: pipeline.schedule.intervalForDate(LAST_DUE_DATE).end };
  const ledgerMs = { cold: [] as number[], warm: [] as number[] };
  for (let i = 0; i < ROUNDS; i++) {
    for (const side of i % 2 ? (["warm", "cold"] as const) : (["cold", "warm"] as const)) {
      const p = side === "cold" ? { ...pipeline, schedule: timetableFromJSON(pipeline.schedule.toJSON()) } : pipeline;
      const started = performance.now();
      await expectedRuns(seeded.store, p, window, seeded.clock.now());
      ledgerMs[side].push(performance.now() - started);
    }
  }
  const page = await (await fetch(server.url + path)).text();
  const assets = [...page.matchAll(/(?:href|src)="(\/ui\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  let assetBytes = 0;
  for (const asset of assets) assetBytes += (await get(server.url + asset)).wireBytes;

  const browser = await launchChromium();
  const paints: number[] = [];
  try {
    for (let i = 0; i < PAINTS; i++) {
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      const tab = await context.newPage();
      await tab.goto(server.url + path, { waitUntil: "load" });
      // On a busy machine the paint entry can arrive after "load": wait for it (buffered) rather than read NaN.
      const fp = await tab.evaluate(() => new Promise<number>((resolve) => {
        new PerformanceObserver((list) => {
          const entry = list.getEntriesByName("first-contentful-paint")[0];
          if (entry) resolve(entry.startTime);
        }).observe({ type: "paint", buffered: true });
        setTimeout(() => resolve(Number.NaN), 10_000);
      }));
      paints.push(fp);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify({
    bench: "ui-grid-365x10",
    rows: 365,
    tasks: 10,
    serverMsP50: round(quantile(times, 0.5)),
    serverMsP90: round(quantile(times, 0.9)),
    ledgerColdMsP50: round(quantile(ledgerMs.cold, 0.5)),
    ledgerWarmMsP50: round(quantile(ledgerMs.warm, 0.5)),
    htmlBytesCompressed: html.wireBytes,
    htmlBytesRaw: Buffer.byteLength(page),
    encoding: html.encoding,
    assetBytesCompressed: assetBytes,
    firstPaintMsP50: round(quantile(paints, 0.5)),
    firstPaintMsMax: round(Math.max(...paints)),
    targets: { htmlKiB: 50, firstPaintMs: 1000 },
    cpus: cpus().length,
    loadavg: loadavg().map((l) => Math.round(l * 100) / 100),
  }));
} finally {
  await server.close();
  await seeded.close();
}
