import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { processHarness, repo, startProcess, waitFor, type Daemon } from "../support/processes.ts";

/**
 * A real Prometheus (Debian's `prometheus` package) scrapes `idem dev` every second, on the web
 * server's /metrics and on its --health-port, and evaluates docs/observability/idem-alerts.yml:
 * every panel of the Grafana dashboard and every series an alert rule reads has data, every
 * rule loads and evaluates with no error; a paused pipeline's due intervals, which have no run,
 * are counted as not run (incidents, missed business dates). Then idem dev is killed with SIGKILL while an attempt
 * runs, and a new `idem serve` still reports that run as running: the facts come from the store.
 * Skipped where Prometheus is not installed, except under CI, where it must be.
 */
const PROMETHEUS = "/usr/bin/prometheus";
const PROMTOOL = "/usr/bin/promtool";
const installed = existsSync(PROMETHEUS);
const OBSERVABILITY = join(repo, "docs/observability");

const CONFIG = `import { defineConfig } from "idem";\nexport default defineConfig({ pipelines: "pipelines", pools: { db: 1 } });\n`;
const PIPELINES = `
import { pipeline, daily, manual } from "idem";
export const sales = pipeline("sales", {
  schedule: daily({ at: "02:00", timezone: "UTC" }),
  start: "2026-09-01",
  promises: [{ dataset: "sales_daily", deadline: "D+1 06:00" }],
}, {
  load: { run: (ctx) => { if (ctx.businessDate === "2026-09-02") throw new Error("the till's file for 2026-09-02 is missing"); } },
  publish: { after: ["load"], publishes: "sales_daily", run: () => ({ rows: 3 }) },
});
export const returns = pipeline("returns", {
  schedule: daily({ at: "01:00", timezone: "UTC" }),
  start: "2026-09-03",
  promises: [{ dataset: "returns_daily", deadline: "D+1 02:00" }],
}, {
  load: { publishes: "returns_daily", run: () => ({ rows: 1 }) },
});
export const slow = pipeline("slow", { schedule: manual({ timezone: "UTC" }) }, {
  hold: { pool: "db", run: () => new Promise((resolve) => setTimeout(resolve, 600_000)) },
});
`;

const h = processHarness();

describe.skipIf(!installed && process.env.CI !== "true")("idem in a real Prometheus", () => {
  it("has data for every dashboard panel and alert rule, counts intervals that did not run, and still counts a run after its process was killed", async () => {
    expect(installed, `${PROMETHEUS} is missing: install Debian's prometheus package (apt-get install prometheus)`).toBe(true);
    if (existsSync(PROMTOOL)) {
      for (const args of [["check", "rules", "idem-alerts.yml"], ["test", "rules", "idem-alerts.test.yml"]]) {
        const run = spawnSync(PROMTOOL, args, { cwd: OBSERVABILITY, encoding: "utf8" });
        expect(run.status, `promtool ${args.join(" ")}:\n${run.stdout}${run.stderr}`).toBe(0);
      }
    }

    const project = h.create({ "idem.config.ts": CONFIG, "pipelines/all.ts": PIPELINES });
    // Paused before any scheduler ran: its intervals of 2026-09-03 and 04 come due and never get a run.
    const pause = h.cli("pause", "returns", "--note", "the returns feed is late");
    expect(pause.status, pause.stderr).toBe(0);
    const dev = h.start("dev", "--now", "2026-09-05T03:00:00Z", "--port", "0", "--health-port", "0");
    const [web, health] = await waitFor("idem dev's two ports", () => {
      const webPort = /web UI on http:\/\/127\.0\.0\.1:(\d+)\//.exec(dev.output())?.[1];
      const healthPort = /health on http:\/\/127\.0\.0\.1:(\d+)\/health/.exec(dev.output())?.[1];
      return webPort && healthPort ? [`127.0.0.1:${webPort}`, `127.0.0.1:${healthPort}`] : undefined;
    });
    for (const date of ["2026-09-01", "2026-09-02"]) expect(h.cli("trigger", "slow", "--date", date, "--reason", "hold the pool").status).toBe(0);
    const backfill = h.cli("backfill", "sales", "--from", "2026-09-01", "--to", "2026-09-03", "--reprocess", "failed", "--no-follow", "--reason", "the till's file came");
    expect(backfill.status, backfill.stderr).toBe(0);

    const prometheus = await startPrometheus(project, [web, health]);
    try {
      await waitFor("Prometheus to scrape both of idem dev's endpoints", async () => {
        const up = await prometheus.query('up{job="idem"} == 1');
        return up.length === 2 ? up : undefined;
      });

      // Some of what the scenario must show, as PromQL sees it.
      const value = async (expr: string) => (await prometheus.query(expr)).map((s) => Number(s.value[1]));
      await waitFor("the failed run of 2026-09-02 and the held pool", async () => {
        const [failed] = await value('max(idem_runs_recent{pipeline="sales",state="failed"})');
        const [queued] = await value('max(idem_queued_task_instances{pool="db"})');
        const [used] = await value('max(idem_pool_slots_used{pool="db"})');
        const [missing] = await value('max(idem_promise_unpublished_business_dates{dataset="sales_daily"})');
        return failed! >= 1 && queued === 1 && used === 1 && missing! >= 1 ? true : undefined;
      });

      // Intervals that did not run: no run at all, so nothing inside a run could have counted them.
      let seen: number[] = [];
      await waitFor("the paused pipeline's two due intervals counted as not run", async () => {
        seen = [
          ...(await value('max(idem_incidents_open{kind="did_not_run",pipeline="returns"})')),
          ...(await value('max(idem_promise_business_dates{dataset="returns_daily",status="missed"})')),
          ...(await value('max(idem_promise_unpublished_business_dates{dataset="returns_daily"})')),
          ...(await value('sum(max by (state) (idem_runs_recent{pipeline="returns"}))')),
        ];
        return seen.join(" ") === "2 2 2 0" ? true : undefined;
      }).catch((error: Error) => {
        throw new Error(`${error.message}\nlast seen (did_not_run incidents, missed dates, unpublished dates, runs): ${seen.join(" ")}`);
      });
      // And the shipped rules take them up (pending until their `for:` has passed).
      for (const alert of ['ALERTS{alertname="IdemOpenIncidents",kind="did_not_run",pipeline="returns"}', 'ALERTS{alertname="IdemFreshnessLag",dataset="returns_daily"}']) {
        await waitFor(`the rule's alert ${alert}`, async () => ((await prometheus.query(alert)).length > 0 ? true : undefined), 20_000);
      }

      const dashboard = JSON.parse(readFileSync(join(OBSERVABILITY, "grafana-dashboard.json"), "utf8")) as { panels: { title: string; targets: { expr: string }[] }[] };
      for (const panel of dashboard.panels) {
        for (const target of panel.targets) {
          await waitFor(`data for the panel "${panel.title}": ${target.expr}`, async () => ((await prometheus.query(target.expr)).length > 0 ? true : undefined), 20_000);
        }
      }

      const rules = await waitFor("every alert rule evaluated", async () => {
        const all = (await prometheus.api("/api/v1/rules")).groups.flatMap((g: { rules: PrometheusRule[] }) => g.rules);
        return all.length > 0 && all.every((r: PrometheusRule) => !r.lastEvaluation.startsWith("0001")) ? (all as PrometheusRule[]) : undefined;
      });
      const ruleFile = readFileSync(join(OBSERVABILITY, "idem-alerts.yml"), "utf8");
      expect(rules.map((r) => r.name).sort()).toEqual([...ruleFile.matchAll(/^\s+- alert: (\w+)$/gm)].map((m) => m[1]).sort());
      for (const rule of rules) {
        expect([rule.name, rule.health, rule.lastError ?? ""]).toEqual([rule.name, "ok", ""]);
        for (const selector of new Set(rule.query.match(/idem_\w+(\{[^}]*\})?/g) ?? [])) {
          expect(await prometheus.query(selector), `${rule.name} reads ${selector}`).not.toEqual([]);
        }
      }

      // SIGKILL while slow's attempt runs: a process started afterwards still reports it running.
      await dev.kill9();
      const killedAt = Date.now() / 1000;
      const serve = h.start("serve", "--port", web.split(":")[1]!);
      await waitFor("the new idem serve scraped, with the run the killed process held", async () => {
        const started = await value(`idem_process_start_time_seconds{instance="${web}"}`);
        if (!(started[0]! >= Math.floor(killedAt))) return undefined;
        const [running] = await value(`idem_runs{instance="${web}",pipeline="slow",state="running"}`);
        return running === 1 ? true : undefined;
      });
      await serve.stop();
    } finally {
      await prometheus.stop();
    }
  }, 120_000);
});

interface PrometheusRule {
  name: string;
  query: string;
  health: string;
  lastError?: string;
  lastEvaluation: string;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Prometheus on 127.0.0.1 scraping the targets every second and evaluating idem's rules, its data in a temporary folder. */
async function startPrometheus(cwd: string, targets: string[]) {
  const dir = mkdtempSync(join(tmpdir(), "idem-prometheus-"));
  const port = await freePort();
  const config = [
    "global:",
    "  scrape_interval: 1s",
    "  evaluation_interval: 1s",
    "rule_files:",
    `  - ${JSON.stringify(join(OBSERVABILITY, "idem-alerts.yml"))}`,
    "scrape_configs:",
    "  - job_name: idem",
    "    static_configs:",
    `      - targets: ${JSON.stringify(targets)}`,
  ].join("\n");
  writeFileSync(join(dir, "prometheus.yml"), config + "\n");
  const daemon: Daemon = startProcess(
    [PROMETHEUS, `--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn"],
    { cwd },
  );
  const base = `http://127.0.0.1:${port}`;
  const api = async (path: string) => {
    const response = await fetch(base + path);
    const body = (await response.json()) as { status: string; data: any; error?: string };
    if (body.status !== "success") throw new Error(`${path}: ${body.error}`);
    return body.data;
  };
  await waitFor("Prometheus to be ready", async () => ((await fetch(`${base}/-/ready`)).ok ? true : undefined));
  return {
    api,
    query: async (expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> =>
      (await api(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
    async stop() {
      await daemon.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
