import type { Command } from "commander";
import { UsageError } from "../../core/model/errors.ts";
import { isoTime, printJson, table } from "../format.ts";
import { engineAction } from "../project.ts";

/** `idem tokens create|list|revoke`: credentials for the HTTP API and the web UI. */
export function registerTokenCommands(program: Command): void {
  const withEngine = engineAction(program);
  const tokens = program.command("tokens").description("API and UI tokens: viewers look, operators act (stored hashed)");

  tokens
    .command("create")
    .description("create a token and print its secret (shown this once)")
    .requiredOption("--name <name>", "who holds it: the actor in the audit log")
    .requiredOption("--role <role>", "viewer or operator")
    .option("--reason <text>", "why, for the audit log")
    .option("--json", "print as JSON")
    .action((flags: { name: string; role: string; reason?: string; json?: boolean }) =>
      withEngine(async (engine, actor) => {
        if (flags.role !== "viewer" && flags.role !== "operator") throw new UsageError(`--role ${flags.role}: expected viewer or operator`);
        const { token, secret } = await engine.createToken({ name: flags.name, role: flags.role, reason: flags.reason, actor });
        if (flags.json) return printJson({ ...token, secret });
        console.log(`token ${token.name} (${token.role}) created; its secret, shown this once:\n${secret}`);
      }),
    );

  tokens
    .command("list")
    .description("live tokens (never their secrets)")
    .option("--all", "revoked ones too")
    .option("--json", "print as JSON")
    .action((flags: { all?: boolean; json?: boolean }) =>
      withEngine(async (engine) => {
        const list = await engine.listTokens({ includeRevoked: flags.all });
        if (flags.json) return printJson(list);
        if (list.length === 0) return console.log("no tokens (create one: idem tokens create --name NAME --role viewer|operator)");
        console.log(
          table(
            ["name", "role", "created", "by", "revoked"],
            list.map((t) => [t.name, t.role, isoTime(t.createdAt), t.createdBy, t.revokedAt === null ? null : `${isoTime(t.revokedAt)} by ${t.revokedBy}`]),
          ),
        );
      }),
    );

  tokens
    .command("revoke <name>")
    .description("revoke a token at once: requests and sessions with it are refused")
    .option("--reason <text>", "why, for the audit log")
    .action((name: string, flags: { reason?: string }) =>
      withEngine(async (engine, actor) => {
        await engine.revokeToken(name, { reason: flags.reason, actor });
        console.log(`token ${name} revoked`);
      }),
    );
}
