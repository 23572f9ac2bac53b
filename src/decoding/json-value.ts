/**
 * A value decoded from a record's JSON. An integer literal beyond 2^53 (which a double cannot
 * hold exactly) is a `bigint` with its exact digits; every other number is a `number` (see
 * docs/mapping.md, Integers).
 */
export type AttrValue = string | number | bigint | boolean | AttrValue[] | { [key: string]: AttrValue | null } | null;
