/**
 * What a mapped record says about the outcome of its operation, for destinations that have a
 * field of their own for it (Datadog's `evt.outcome`, Splunk CIM's `action`/`status`):
 * `error.type` set (the mapper sets it for a failed `eventOutcome`) → failure; else the outcome
 * the record carries: `tableau.event_outcome` (`success`, or an error kind → failure), a
 * `tableau.status` of `success`/`failure` (login events), `tableau.is_error`/`tableau.is_failure`
 * true → failure. Undefined when the record says nothing about it.
 */
import type { MappedLogRecord } from '../mapping/log-record.js';
import { ATTR_ERROR_TYPE } from '../mapping/semantic-conventions.js';

export type RecordOutcome = 'success' | 'failure';

const OUTCOME_ATTR = 'tableau.event_outcome';
const STATUS_ATTR = 'tableau.status';
const FAILURE_FLAGS = ['tableau.is_error', 'tableau.is_failure'];

export function recordOutcome(attributes: MappedLogRecord['attributes']): RecordOutcome | undefined {
  const errorType = attributes[ATTR_ERROR_TYPE];
  if (errorType !== undefined && errorType !== null && errorType !== '') return 'failure';
  for (const flag of FAILURE_FLAGS) if (attributes[flag] === true) return 'failure';
  const outcome = attributes[OUTCOME_ATTR];
  if (typeof outcome === 'string' && outcome !== '') return outcome.toLowerCase() === 'success' ? 'success' : 'failure';
  const status = attributes[STATUS_ATTR];
  if (typeof status === 'string') {
    const s = status.toLowerCase();
    if (s === 'success' || s === 'failure') return s;
  }
  return undefined;
}

/** A record attribute as a plain scalar (string, number, boolean; a bigint as its digits), else undefined. */
export function scalarAttribute(attributes: MappedLogRecord['attributes'], name: string): string | number | boolean | undefined {
  const v = attributes[name];
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (typeof v === 'number' || typeof v === 'boolean') return v;
  if (typeof v === 'bigint') return v.toString();
  return undefined;
}
