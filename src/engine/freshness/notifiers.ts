import { spawn } from "node:child_process";
import type { Clock } from "../../core/model/clock.ts";
import type { OutboxAlert, FreshnessStore } from "../../store/port.ts";
import type { NotifierConfig } from "../project/config.ts";

export interface DispatcherOptions {
  store: FreshnessStore;
  clock: Clock;
  notifiers: Readonly<Record<string, NotifierConfig>>;
  log: (line: string) => void;
  /** First retry delay; doubles per failure up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
  env?: NodeJS.ProcessEnv;
}

/**
 * Delivers queued alerts outside every retrying task and outside the scheduler's tick: a
 * webhook that is down is retried with backoff and never blocks scheduling.
 */
export class AlertDispatcher {
  readonly #o: Required<DispatcherOptions>;

  constructor(options: DispatcherOptions) {
    this.#o = { retryMs: 30_000, maxRetryMs: 3_600_000, env: process.env, ...options };
  }

  /** Sends every alert that is due; returns how many were delivered. */
  async deliverDue(limit = 50): Promise<number> {
    const { store, clock } = this.#o;
    let delivered = 0;
    for (const alert of await store.dueAlerts(clock.now(), limit)) {
      try {
        await this.#send(alert);
        await store.recordAlertDelivery(alert.id, { at: clock.now() });
        delivered++;
      } catch (error) {
        const wait = Math.min(this.#o.maxRetryMs, this.#o.retryMs * 2 ** alert.tries);
        const message = (error as Error).message;
        await store.recordAlertDelivery(alert.id, { at: clock.now(), error: message, nextAttemptAt: clock.now() + wait });
        this.#o.log(`alert ${alert.event} ${alert.incidentKey} to ${alert.notifier} failed (${message}); retrying in ${Math.round(wait / 1000)}s`);
      }
    }
    return delivered;
  }

  /** Delivers until `signal` aborts, looking every `everyMs`. */
  async run(signal: AbortSignal, everyMs = 1_000): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.deliverDue();
      } catch (error) {
        this.#o.log(`alert delivery: ${(error as Error).message}`);
      }
      await this.#o.clock.sleep(everyMs, signal);
    }
  }

  async #send(alert: OutboxAlert): Promise<void> {
    const config = this.#o.notifiers[alert.notifier];
    if (!config) throw new Error(`no notifier named "${alert.notifier}" in idem.config.ts`);
    const body = { ...alert.payload, notifier: alert.notifier };
    if ("log" in config) {
      this.#o.log(`ALERT ${alert.event === "open" ? "OPEN" : "RESOLVED"} ${alert.incidentKey}: ${String(alert.payload.message)}`);
      return;
    }
    if ("webhook" in config) {
      const url = this.#expand(config.webhook.url);
      const headers = Object.fromEntries(Object.entries(config.webhook.headers ?? {}).map(([k, v]) => [k, this.#expand(v)]));
      let response: Response;
      try {
        response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(config.webhook.timeoutMs ?? 5_000),
        });
      } catch (error) {
        // The cause may quote the URL; say only what happened.
        throw new Error(`webhook ${alert.notifier}: ${(error as Error).name === "TimeoutError" ? "timed out" : "could not connect"}`);
      }
      if (!response.ok) throw new Error(`webhook ${alert.notifier}: HTTP ${response.status}`);
      return;
    }
    await this.#runCommand(alert, config.command, body);
  }

  #runCommand(alert: OutboxAlert, argv: readonly string[], body: Record<string, unknown>): Promise<void> {
    const [program, ...args] = argv as [string, ...string[]];
    return new Promise((resolve, reject) => {
      const child = spawn(program, args, {
        stdio: ["pipe", "ignore", "ignore"],
        env: { ...this.#o.env, IDEM_ALERT_EVENT: alert.event, IDEM_ALERT_KEY: alert.incidentKey, IDEM_ALERT_MESSAGE: String(body.message) },
      });
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      child.on("error", (e) => {
        clearTimeout(timer);
        reject(new Error(`command ${alert.notifier}: ${(e as NodeJS.ErrnoException).code ?? "failed to start"}`));
      });
      child.on("exit", (code) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`command ${alert.notifier}: exited with ${code}`));
      });
      child.stdin!.on("error", () => {});
      child.stdin!.end(JSON.stringify(body));
    });
  }

  #expand(text: string): string {
    return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (_, braced, bare) => {
      const name = braced ?? bare;
      const value = this.#o.env[name];
      if (value === undefined) throw new Error(`notifier setting names $${name}, which is not set in the environment`);
      return value;
    });
  }
}
