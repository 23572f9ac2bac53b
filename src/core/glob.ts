/** `*` and `?` globs over names (event types, attribute names); no path semantics. */
export function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

export function globMatcher(globs: readonly string[]): (name: string) => boolean {
  if (globs.length === 0) return () => false;
  const res = globs.map(globToRegExp);
  return (name) => res.some((r) => r.test(name));
}
