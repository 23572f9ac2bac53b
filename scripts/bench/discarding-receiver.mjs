/**
 * The bench's OTLP/HTTP receiver, in a process of its own (as a collector is): accepts
 * POST /v1/logs, counts the requests and bytes, discards the body and answers 200.
 *
 *   node scripts/bench/discarding-receiver.mjs
 *
 * Listens on 127.0.0.1 (a free port) and writes one line `{"port":N}` to stdout once listening.
 * GET /counts answers `{"requests":N,"bytes":N}`; POST /reset sets both to 0. It exits when its
 * standard input closes (its parent went away) or on SIGTERM.
 *
 * Run in the bench's own process, the receiver shared that process's event loop with the /proc
 * polling of the child measured and its heap with what the corpus generation left, and a slower
 * answer keeps more of the measured daemon's batches in flight (a higher peak there).
 */
import http from 'node:http';

let requests = 0;
let bytes = 0;

const server = http.createServer((req, res) => {
  const url = req.url ?? '';
  if (req.method === 'POST' && url.startsWith('/v1/logs')) {
    req.on('data', (chunk) => {
      bytes += chunk.length;
    });
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf', 'Content-Length': '0' });
      res.end();
    });
    return;
  }
  req.resume();
  if (req.method === 'GET' && url === '/counts') {
    const body = JSON.stringify({ requests, bytes });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
    return;
  }
  if (req.method === 'POST' && url === '/reset') {
    requests = 0;
    bytes = 0;
    res.writeHead(204);
    res.end();
    return;
  }
  res.writeHead(404, { 'Content-Length': '0' });
  res.end();
});
server.keepAliveTimeout = 30_000;

let stopping = false;
function stop() {
  // (stdin's 'end' and 'close' both come when the parent goes: close the server once)
  if (stopping) return;
  stopping = true;
  server.closeAllConnections();
  server.close(() => process.exit(0));
}
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.resume();

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
