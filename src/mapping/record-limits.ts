/** The limits a record must keep to be mapped (past them it is dead-lettered, not truncated). */

/**
 * Fields a record may have (`pipeline.maxAttributesPerRecord`): Tableau's have tens. A record
 * past it is dead-lettered, not truncated: a line of a million fields would otherwise exhaust an
 * encode worker's heap and fail its batch on every retry.
 */
export const DEFAULT_MAX_ATTRIBUTES_PER_RECORD = 5000;

/** The dead-letter reason of a record over the cap. */
export function tooManyFields(cap: number): string {
  return `record has more than ${cap} fields (pipeline.maxAttributesPerRecord; nested fields and array items count too)`;
}

/**
 * A record with a value nested deeper than this is not mapped (it is dead-lettered): encoders and
 * JSON.stringify recurse, and a line of 100 000 nested brackets would overflow their stack and
 * fail its whole batch again and again. Tableau's records are flat; 100 levels is plenty.
 */
export const MAX_VALUE_DEPTH = 100;

/** Whether a parsed JSON value nests deeper than `max` levels (iterative: no recursion here either). */
export function nestedDeeperThan(root: object, max: number): boolean {
  const stack: Array<{ v: object; d: number }> = [{ v: root, d: 1 }];
  while (stack.length > 0) {
    const { v, d } = stack.pop()!;
    if (d > max) return true;
    if (Array.isArray(v)) {
      for (const item of v) if (item !== null && typeof item === 'object') stack.push({ v: item as object, d: d + 1 });
    } else {
      for (const k in v) {
        const item = (v as Record<string, unknown>)[k];
        if (item !== null && typeof item === 'object') stack.push({ v: item, d: d + 1 });
      }
    }
  }
  return false;
}
