/** Where a state store lives, told apart without loading any driver. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** "sqlite:.idem/state.db" and "sqlite:///abs/state.db" name files; a bare path is one already. */
export function sqlitePath(location: string): string {
  if (!/^sqlite:/i.test(location)) return location;
  const rest = location.slice("sqlite:".length);
  return rest.startsWith("//") ? rest.slice(2) : rest;
}
