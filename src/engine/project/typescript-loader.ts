let registered: Promise<void> | null = null;

/**
 * Lets this process import the user's TypeScript (config and pipeline files) with no build step.
 * tsx costs a loader thread and a compiler, so it is registered only when a command needs it.
 */
export function enableTypeScript(): Promise<void> {
  registered ??= import("tsx/esm/api").then(({ register }) => {
    register();
  });
  return registered;
}
