/** A server-sent-events client for tests: connects with fetch and collects parsed events. */
export class SseClient {
  readonly events: { event: string; id: string | null; data: any }[] = [];
  readonly #abort = new AbortController();
  #waiters: (() => void)[] = [];
  status = 0;
  /** Set when the server ended the stream (not when this client closed it). */
  endedByServer = false;

  static async open(url: string, headers: Record<string, string>): Promise<SseClient> {
    const client = new SseClient();
    const response = await fetch(url, { headers, signal: client.#abort.signal });
    client.status = response.status;
    if (response.ok && response.body) void client.#read(response.body);
    return client;
  }

  async #read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf("\n\n")) !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = new Map<string, string>();
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) continue;
            const colon = line.indexOf(":");
            fields.set(line.slice(0, colon), line.slice(colon + 1).trimStart());
          }
          if (!fields.has("data")) continue;
          this.events.push({ event: fields.get("event") ?? "message", id: fields.get("id") ?? null, data: JSON.parse(fields.get("data")!) });
          for (const wake of this.#waiters.splice(0)) wake();
        }
      }
      this.endedByServer = true;
    } catch {
      // aborted
    }
    for (const wake of this.#waiters.splice(0)) wake();
  }

  /** Waits until the server ends the stream, up to `ms`; says what it saw when it gives up. */
  async waitForEnd(ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!this.endedByServer) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the stream was still open after ${ms} ms; saw: ${JSON.stringify(this.events.map((e) => e.event))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 50));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Waits until an event matches, up to `ms`; says what it saw when it gives up. */
  async waitFor(match: (e: { event: string; data: any }) => boolean, ms = 10_000): Promise<{ event: string; id: string | null; data: any }> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.events.find(match);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching event within ${ms} ms; saw: ${JSON.stringify(this.events.map((e) => [e.event, e.data]))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.#abort.abort();
  }
}
