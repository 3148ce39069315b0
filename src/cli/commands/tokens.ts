import type { Command } from "commander";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/tokens.ts");

/** `idem tokens create|list|revoke`: credentials for the HTTP API and the web UI. */
export function registerTokenCommands(program: Command): void {
  const tokens = program.command("tokens").description("API and UI tokens: viewers look, operators act (stored hashed)");
  tokens
    .command("create")
    .description("create a token and print its secret (shown this once)")
    .requiredOption("--name <name>", "who holds it: the actor in the audit log")
    .requiredOption("--role <role>", "viewer or operator")
    .option("--reason <text>", "why, for the audit log")
    .option("--json", "print as JSON")
    .action(lazy(actions, "createToken"));
  tokens
    .command("list")
    .description("live tokens (never their secrets)")
    .option("--all", "revoked ones too")
    .option("--json", "print as JSON")
    .action(lazy(actions, "listTokens"));
  tokens
    .command("revoke <name>")
    .description("revoke a token at once: requests and sessions with it are refused")
    .option("--reason <text>", "why, for the audit log")
    .action(lazy(actions, "revokeToken"));
}
