#!/usr/bin/env node
// Pipelines are TypeScript files loaded with no build step: tsx compiles them on import.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
