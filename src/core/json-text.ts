/**
 * JSON text of a record value that may hold `bigint`s (integers beyond 2^53, see
 * mapping/log-record.ts): a bigint is written as its digits (a JSON number keeps any number of
 * digits; it is the reader's choice to keep them), everything else as JSON.stringify writes it.
 * JSON.stringify itself is used whenever the value holds no bigint (it throws on one), so the
 * common case costs nothing extra.
 */
export function jsonText(v: unknown): string {
  try {
    return JSON.stringify(v);
  } catch (err) {
    if (!(err instanceof TypeError) || !containsBigInt(v)) throw err;
    return withBigInts(v) ?? 'null';
  }
}

function containsBigInt(v: unknown): boolean {
  const stack: unknown[] = [v];
  while (stack.length > 0) {
    const x = stack.pop();
    if (typeof x === 'bigint') return true;
    if (x !== null && typeof x === 'object') for (const k in x) stack.push((x as Record<string, unknown>)[k]);
  }
  return false;
}

/** JSON.stringify's output for plain data (no toJSON, no cycles), bigints as digits; undefined where JSON.stringify leaves a value out. */
function withBigInts(v: unknown): string | undefined {
  switch (typeof v) {
    case 'bigint':
      return v.toString();
    case 'object': {
      if (v === null) return 'null';
      if (Array.isArray(v)) return `[${v.map((x) => withBigInts(x) ?? 'null').join(',')}]`;
      const parts: string[] = [];
      for (const k of Object.keys(v)) {
        const text = withBigInts((v as Record<string, unknown>)[k]);
        if (text !== undefined) parts.push(`${JSON.stringify(k)}:${text}`);
      }
      return `{${parts.join(',')}}`;
    }
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    default:
      return JSON.stringify(v);
  }
}
