import pg from "pg";
import { isConnectionError, quoteIdent } from "./connection.ts";
import { SESSION_SQL } from "./sql.ts";

const PING_MS = 10_000;
const MAX_BACKOFF_MS = 5_000;

/**
 * One LISTEN connection of its own (a pooled connection would be handed to other queries).
 * It outlives the server going away: when the connection drops it reconnects with a growing
 * pause, LISTENs again and calls `onWork` once, since notifications sent meanwhile are lost.
 * A ping notices a connection that died without a word (a host cut off the network).
 */
export class WorkListener {
  readonly #config: pg.ClientConfig;
  readonly #channel: string;
  readonly #onWork: (payload?: string) => void;
  readonly #log: ((line: string) => void) | undefined;
  /** The connection in use or being opened; events of any other are an old one's last words. */
  #client: pg.Client | null = null;
  #listening = false;
  #stopped = false;
  #backoffMs = 100;
  #retry: NodeJS.Timeout | null = null;
  #ping: NodeJS.Timeout | null = null;
  #everConnected = false;

  /** `onWork` gets the notification's payload; none after reconnecting (anything may have been missed). */
  constructor(config: pg.ClientConfig, channel: string, onWork: (payload?: string) => void, log?: (line: string) => void) {
    this.#config = config;
    this.#channel = channel;
    this.#onWork = onWork;
    this.#log = log;
  }

  /** Resolves once listening, or after the first failure (it keeps trying in the background). */
  async start(): Promise<void> {
    await this.#connect();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#retry) clearTimeout(this.#retry);
    if (this.#ping) clearInterval(this.#ping);
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => {});
  }

  get listening(): boolean {
    return this.#listening;
  }

  async #connect(): Promise<void> {
    if (this.#stopped) return;
    const client = new pg.Client(this.#config);
    this.#client = client;
    client.on("error", (error) => this.#lost(client, error));
    client.on("end", () => this.#lost(client, null));
    client.on("notification", (message) => this.#onWork(message.payload));
    try {
      await client.connect();
      await client.query(SESSION_SQL.listen(quoteIdent(this.#channel)));
    } catch (error) {
      this.#lost(client, error);
      return;
    }
    if (this.#stopped || this.#client !== client) {
      await client.end().catch(() => {});
      return;
    }
    this.#listening = true;
    this.#backoffMs = 100;
    this.#startPing(client);
    if (this.#everConnected) {
      this.#log?.("work channel: listening again");
      this.#onWork();
    }
    this.#everConnected = true;
  }

  #startPing(client: pg.Client): void {
    if (this.#ping) clearInterval(this.#ping);
    let outstanding = false;
    this.#ping = setInterval(() => {
      if (outstanding) return this.#lost(client, new Error("work channel: no answer to a ping"));
      outstanding = true;
      client.query(SESSION_SQL.ping).then(
        () => void (outstanding = false),
        (error) => this.#lost(client, error),
      );
    }, PING_MS);
    this.#ping.unref();
  }

  #lost(client: pg.Client, error: unknown): void {
    if (this.#client !== client) return;
    const wasListening = this.#listening;
    this.#client = null;
    this.#listening = false;
    if (this.#ping) clearInterval(this.#ping);
    this.#ping = null;
    // end() on a broken socket can hang; the socket is destroyed either way.
    void client.end().catch(() => {});
    if (this.#stopped || this.#retry) return;
    if (wasListening || !isConnectionError(error)) {
      this.#log?.(`work channel lost (${(error as Error | null)?.message ?? "connection closed"}); reconnecting`);
    }
    const wait = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, MAX_BACKOFF_MS);
    this.#retry = setTimeout(() => {
      this.#retry = null;
      void this.#connect();
    }, wait);
    this.#retry.unref();
  }
}
