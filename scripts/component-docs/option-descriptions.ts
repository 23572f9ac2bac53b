/**
 * What each configuration option means, for the option tables of docs/ (written by
 * scripts/generate-component-docs.ts). The schemas give the names, types, required options and
 * most defaults; what they cannot say lives here, keyed by `<kind>/<type>` and option name
 * (nested options dotted: `ack.timeout`). A `.describe()` text on a schema, when there is one,
 * is used instead of the entry here.
 *
 * `default` is for defaults the schema cannot state (derived from other options, from the
 * environment, or set by the code): when the schema has a default too, the text must contain it,
 * so the two cannot drift apart unnoticed.
 */
export interface OptionDoc {
  text: string;
  default?: string;
}

export type OptionDocs = Record<string, OptionDoc>;

const AWS_CREDENTIALS: OptionDocs = {
  roleArn: { text: 'assume this IAM role (STS AssumeRole); the temporary credentials are refreshed before they expire' },
  externalId: { text: "the role's external id (with `roleArn`)" },
  roleSessionName: { text: 'session name shown in CloudTrail (with `roleArn`)', default: '`tableau-activity-otel`' },
  accessKeyIdEnv: { text: 'name of the environment variable holding the static access key id (never the key itself); with `roleArn` it is the key used to call STS' },
  secretAccessKeyEnv: { text: 'name of the environment variable holding the static secret access key (never the key itself); with `roleArn` it is the key used to call STS' },
  sessionTokenEnv: { text: 'name of the variable holding a session token, for temporary static keys' },
};

const TLS: OptionDocs = {
  caFile: { text: 'PEM file with the CA that signed the endpoint\'s certificate (a private or self-signed CA)', default: "Node's bundled CAs" },
  insecureSkipVerify: { text: '`true` turns certificate verification off (test setups only; warned about at start); verification is on unless turned off explicitly' },
};

export const OPTION_DOCS: Record<string, OptionDocs> = {
  'source/directory': {
    name: { text: 'checkpoint key; set it if you move the path but keep the state', default: '`directory:<path>`' },
    path: { text: 'root of the tree (relative to the config file)' },
    pollInterval: { text: 'time between polls in daemon mode' },
    lookbackHours: { text: 'finished files this far behind the newest hour partition are forgotten from the checkpoint and a watermark remembers them; a file that lands later than that in an older partition is not read' },
    extensions: { text: 'file name endings read, case-insensitive (an empty list reads all); hidden files and `*.tmp` are skipped' },
    concurrency: { text: 'files opened ahead of the one being read, their first bytes read ahead (files are still processed in order)' },
    finishAfter: { text: 'a last line without a newline is read once its file has not changed for this long **and** a newer file exists in its folder; `0` reads it at once (folders of finished files)' },
  },
  'source/s3': {
    name: { text: 'checkpoint key; set it if you move the bucket or prefix but keep the state', default: '`s3://<bucket>/<prefix>`' },
    bucket: { text: 'bucket name' },
    prefix: { text: 'the folder above `pod=…/`; a trailing `/` is added when missing' },
    region: { text: "the bucket's region (the Tableau site's region)" },
    endpoint: { text: 'URL of an S3-compatible store (MinIO, …)', default: 'AWS' },
    forcePathStyle: { text: 'path-style URLs (`endpoint/bucket/key`), which most S3-compatible stores need; only with `endpoint`' },
    since: { text: 'first hour partition read: `YYYY-MM-DD`, `YYYY-MM-DDTHH`, an ISO 8601 time (UTC unless it has an offset), or a duration back from now (`36h`, `14d`)', default: 'everything in the bucket' },
    until: { text: 'end of the window (exclusive), same forms; partitions from that hour on are not read' },
    pollInterval: { text: 'time between polls in daemon mode' },
    lookbackHours: { text: 'how far behind the newest hour partition read the source keeps re-listing: an object that lands late in an hour already read is picked up while it is within this window, later than that it is not read' },
    concurrency: { text: 'objects fetched at once (their progress still commits in order)' },
    ...AWS_CREDENTIALS,
  },
  'source/s3-sqs': {
    name: { text: 'checkpoint key', default: '`s3-sqs:<queueUrl>`' },
    queueUrl: { text: "the queue's URL, `https://sqs.<region>.amazonaws.com/<account>/<name>`" },
    region: { text: "region of the queue and the bucket (S3 notifies queues in the bucket's own region only)" },
    endpoint: { text: 'an SQS-compatible endpoint', default: "the queue URL's host" },
    s3Endpoint: { text: 'an S3-compatible endpoint (MinIO, …)', default: 'AWS' },
    forcePathStyle: { text: 'path-style S3 URLs; only with `s3Endpoint`' },
    bucket: { text: 'only objects of this bucket are read; a notification naming another bucket is logged and left on the queue (it ends in the dead-letter queue)', default: 'any bucket' },
    prefix: { text: 'only keys under it are read; notifications for other keys are deleted without reading; a trailing `/` is added when missing' },
    visibilityTimeout: { text: 'how long a received message stays hidden from the other replicas. While its objects are waiting or being read it is extended every half timeout, so it does not limit object size: it is how soon the work of a replica that died is taken over by another (2 s to 12 h)' },
    maxMessages: { text: 'messages per `ReceiveMessage` call' },
    concurrency: { text: 'objects in progress per replica (received, being fetched or read); receives are repeated until this many' },
    waitTime: { text: 'long-polling wait of a receive on an idle queue (1 s to 20 s)' },
    roleArn: { text: 'credentials as for [`s3`](s3.md#credentials); one set serves both the queue and the bucket. Assume this IAM role (STS AssumeRole)' },
    externalId: AWS_CREDENTIALS.externalId!,
    roleSessionName: AWS_CREDENTIALS.roleSessionName!,
    accessKeyIdEnv: AWS_CREDENTIALS.accessKeyIdEnv!,
    secretAccessKeyEnv: AWS_CREDENTIALS.secretAccessKeyEnv!,
    sessionTokenEnv: AWS_CREDENTIALS.sessionTokenEnv!,
  },
  'source/tcm': {
    name: { text: 'checkpoint key', default: '`tcm:<tenantId>:<scope>`' },
    url: { text: 'TCM base URL; a URL that is not `https` (other than a loopback address) is warned about' },
    tenantId: { text: 'the TCM tenant id (TCM → Tenant settings)' },
    patEnv: { text: 'name of the environment variable holding the TCM personal access token secret. Exactly one of `patEnv` and `patFile` is required. Read again at every sign-in, so a rotated token is picked up without a restart' },
    patFile: { text: 'a file holding the TCM personal access token secret (relative to the config file; surrounding whitespace ignored). Exactly one of `patEnv` and `patFile` is required. Read again at every sign-in' },
    scope: { text: '`tenant`: tenant events; `sites`: site events of each site; `both`' },
    sites: { text: 'site ids for `sites`/`both`', default: 'every site the tenant lists' },
    eventTypes: { text: 'only these types (the API takes one type per listing: one listing per type and window)', default: 'all' },
    since: { text: 'ISO 8601 time with a zone (or a date, UTC): on the first start, files that became available from then on are read (retention is 14 days, up to 365 with Advanced Management). Ignored once the checkpoint has a position: delete the source\'s checkpoint entry to start over', default: '24 hours before the first start' },
    until: { text: 'stop at this availability time (backfills of a fixed period)' },
    pollInterval: { text: 'time between polls in daemon mode (1 s while a backlog remains, see `maxFilesPerPoll`)' },
    maxRequestsPerSecond: { text: 'every request of this source (sign-in, listings, URL requests, downloads) takes a token from one bucket: at most this many in any second' },
    overlap: { text: 'how late TCM may list a file after its availability time: each poll re-lists this much before its position, and the position stays this far behind now' },
    maxFilesPerPoll: { text: 'a poll stops listing after the window in which this many files were listed; the rest follows on the next poll. Keeps the checkpoint small during a long backfill; `run --once` keeps listing until the backlog is read' },
    downloadHosts: { text: 'download hosts trusted although they resolve to non-public addresses (e.g. an S3 VPC endpoint): `host`, `host:port` or `*.suffix`. See [TCM credentials and downloads](../security.md#tcm-credentials-and-downloads)' },
    maxResponseBytes: { text: 'largest TCM API answer read (sign-in, a listing page, a URL batch), in bytes (4 MiB by default); a longer one is an error' },
  },
  'destination/otlp': {
    name: { text: 'name in logs, metrics and dead letters', default: '`otlp`' },
    endpoint: { text: 'base URL (`/v1/logs` is appended) or the full URL ending in `/v1/logs`', default: 'the `OTEL_EXPORTER_OTLP_*` variables, else `http://localhost:4318`' },
    protocol: { text: '`http/protobuf` or `http/json`', default: '`http/protobuf` (or `OTEL_EXPORTER_OTLP_PROTOCOL`)' },
    headers: { text: 'extra request headers, e.g. `{ dd-api-key: "${DD_API_KEY}" }`; credential headers are scrubbed from every log line' },
    compression: { text: '`gzip` or `none`', default: '`OTEL_EXPORTER_OTLP_COMPRESSION`, else none' },
    timeout: { text: 'per request, a duration (`30s`, `500ms`; a number is seconds); must be longer than the destination\'s slowest answer', default: '`OTEL_EXPORTER_OTLP_TIMEOUT`, else `10s`' },
    timeoutMs: { text: 'deprecated: `timeout` in milliseconds, still read (a warning is logged once)' },
    caFile: { text: "PEM file of the CA that signed the endpoint's certificate", default: "Node's bundled roots" },
    insecureSkipVerify: TLS.insecureSkipVerify!,
  },
  'destination/file': {
    name: { text: 'name in logs, metrics and dead letters', default: '`file` (`stdout` for `path: "-"`)' },
    path: { text: 'the file OTLP JSON lines are appended to (relative to the config file; created with mode 0600), or `-` for stdout' },
  },
  'destination/splunk-hec': {
    name: { text: 'name in logs, metrics and dead letters', default: '`splunk-hec`' },
    url: { text: 'base URL of the collector, e.g. `https://splunk.example.com:8088` (`/services/collector/event` is appended), or that full URL' },
    tokenEnv: { text: 'name of the environment variable holding the HEC token' },
    index: { text: '`index` of every event', default: "the token's default index" },
    sourcetype: { text: '`sourcetype` of every event' },
    source: { text: '`source` of every event', default: "the token's default" },
    host: { text: '`host` of every event', default: "the token's default" },
    fields: { text: 'attribute names (of the record or its resource, e.g. `user.id`, `client.address`, `tableau.site_luid`) also sent as HEC indexed `fields`, for fast `field::value` searches; numbers and booleans become strings, objects JSON text, arrays arrays of strings (HEC accepts nothing else)' },
    cimFields: { text: 'also send Splunk CIM fields (`user`, `src`, `app`, `action`, `status`, …) as indexed `fields`, for the Authentication and Change data models; see [CIM fields](#cim-fields). A name also in `fields` takes the attribute\'s value' },
    maxRequestBytes: { text: "most bytes of one request body before compression; a batch is split into several requests to stay under it (Splunk Cloud's HEC limit is about 1 MB; raise it to your `max_content_length`)" },
    compression: { text: '`gzip` or `none`' },
    timeout: { text: 'per request, a duration (`30s`, `500ms`; a number is seconds)' },
    timeoutMs: { text: 'deprecated: `timeout` in milliseconds, still read (a warning is logged once)' },
    headers: { text: 'extra request headers; the destination\'s own auth header wins over one of the same name; credential headers are scrubbed from every log line' },
    ...TLS,
    ack: { text: 'indexer acknowledgement (the token must have it on); see [Indexer acknowledgement](#indexer-acknowledgement)', default: 'off' },
    'ack.enabled': { text: 'use indexer acknowledgement', default: '`true` when `ack` is given' },
    'ack.pollInterval': { text: 'time between polls of `/services/collector/ack`' },
    'ack.timeout': { text: 'a request not acknowledged within this long is sent again (a retry)' },
  },
  'destination/datadog': {
    name: { text: 'name in logs, metrics and dead letters', default: '`datadog`' },
    site: { text: 'the Datadog site the intake belongs to' },
    url: { text: 'another intake URL (a proxy, a test server): base URL (`/api/v2/logs` is appended) or the full URL', default: 'from `site`' },
    apiKeyEnv: { text: 'name of the environment variable holding the API key' },
    service: { text: "the `service` of every entry, when set; otherwise each record's resource `service.name` (`tableau-cloud`, `tableau-cloud-manager`)", default: 'the resource\'s `service.name`' },
    hostname: { text: 'the `hostname` of every entry; unset: the resource\'s `host.name` (Tableau Server nodes), else none' },
    tags: { text: 'extra tags, `key:value` or `value` (no commas)' },
    compression: { text: '`gzip` or `none`' },
    timeout: { text: 'per request, a duration (`30s`, `500ms`; a number is seconds)' },
    timeoutMs: { text: 'deprecated: `timeout` in milliseconds, still read (a warning is logged once)' },
    headers: { text: 'extra request headers; the destination\'s own auth header wins over one of the same name; credential headers are scrubbed from every log line' },
    caFile: { text: 'as for [`splunk-hec`](splunk-hec.md): PEM file with the CA that signed the certificate (for a proxy with its own CA)', default: "Node's bundled CAs" },
    insecureSkipVerify: TLS.insecureSkipVerify!,
  },
  'settings/pipeline': {
    batchSize: { text: 'lines per batch (one export request per destination, split further if a destination\'s size limit needs it)' },
    maxBatchBytes: { text: 'raw bytes per batch' },
    maxInFlightBatches: { text: 'unacknowledged batches per source: bounds memory and the re-sends after a crash' },
    maxLineBytes: { text: 'longer lines are dead-lettered without being buffered' },
    maxObjectBytes: { text: 'decompressed bytes per object (16 GiB); the rest of a bigger one is one dead letter' },
    maxObjectLines: { text: 'lines per object, blank ones included; the rest is one dead letter' },
    retryFor: { text: 'retry budget per batch: how long one batch is retried before its destination counts as unreachable (`--retry-for` overrides it)', default: 'forever in the daemon, `5m` with `--once`' },
    checkpointInterval: { text: '`0` saves the checkpoint after every acknowledgement; a duration saves it at most that often', default: '`0`' },
    workers: { text: 'encode threads (parse, map, encode); `0` = the main thread', default: 'one fewer than the cores (1 to 4)' },
    maxAttributesPerRecord: { text: 'a record with more fields (nested ones and array items count) is dead-lettered whole, never truncated' },
  },
  'settings/server': {
    enabled: { text: '`false` turns the HTTP endpoints off' },
    address: { text: '`host:port` the endpoints listen on (`0.0.0.0:9464`, `[::]:9464`, `:9464` for every IPv4 interface, port `0` for any free port); `--listen` overrides it', default: 'the `TAO_LISTEN` environment variable, else `127.0.0.1:9464`' },
    readyDetail: { text: "who gets `/readyz`'s detail: callers in `readyDetailFrom` (`loopback`), `all`, `none`; others get the status only" },
    readyDetailFrom: { text: 'CIDR ranges or single addresses of the callers that get the detail, with `readyDetail: loopback` only', default: '`[127.0.0.0/8, "::1/128"]`' },
  },
};
