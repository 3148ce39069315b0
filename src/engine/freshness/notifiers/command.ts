import { spawn } from "node:child_process";
import type { NotifierSettings } from "../../project/config.ts";
import { receivedOf } from "./message.ts";
import type { AlertView, NotifierKindDefinition } from "./notifier.ts";

/**
 * A program run with the alert as JSON on stdin and in IDEM_ALERT_EVENT, IDEM_ALERT_KEY and
 * IDEM_ALERT_MESSAGE, on top of idem's environment. Its argv is passed as written, never
 * expanded: expanding the alert's text into argv would let a message run code.
 */
export const commandNotifier: NotifierKindDefinition<NotifierSettings["command"]> = {
  variables: () => [],
  send: (argv, sent, { env }) => {
    const alert = receivedOf(sent);
    return run(argv, JSON.stringify(alert), { ...env, IDEM_ALERT_EVENT: alert.event, IDEM_ALERT_KEY: alert.key, IDEM_ALERT_MESSAGE: alert.message });
  },
  sendDigest: (argv, sent, { env, name }) => {
    const alerts: AlertView[] = sent.map(receivedOf);
    return run(argv, JSON.stringify({ event: "digest", notifier: name, count: alerts.length, alerts }), {
      ...env,
      IDEM_ALERT_EVENT: "digest",
      IDEM_ALERT_KEY: alerts.map((a) => a.key).join(" "),
      IDEM_ALERT_MESSAGE: alerts.map((a) => a.message).join("\n"),
    });
  },
};

function run(argv: readonly string[], stdin: string, env: NodeJS.ProcessEnv): Promise<void> {
  const [program, ...args] = argv as [string, ...string[]];
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ["pipe", "ignore", "ignore"], env });
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(new Error((e as NodeJS.ErrnoException).code ?? "failed to start"));
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(code === null ? `killed by ${signal}` : `exited with ${code}`));
    });
    child.stdin!.on("error", () => {});
    child.stdin!.end(stdin);
  });
}
