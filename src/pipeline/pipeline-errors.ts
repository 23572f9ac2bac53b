/** The two errors that stop a source's pipeline (nothing is skipped: the checkpoint stays where it was). */

/** An object could not be read after several attempts (a transient error): the poll stops, nothing is skipped. */
export class SourceReadError extends Error {
  constructor(
    readonly object: string,
    reason: string,
  ) {
    super(`cannot read ${object}: ${reason}`);
    this.name = 'SourceReadError';
  }
}

/** A destination gave up (retry budget spent): the pipeline stops without moving the checkpoint further. */
export class DestinationUnavailableError extends Error {
  constructor(
    readonly destination: string,
    reason: string,
  ) {
    super(`destination ${destination} unavailable: ${reason}`);
    this.name = 'DestinationUnavailableError';
  }
}
