/**
 * What a server answers between listening and having its app (readiness, issue 27 §2): 503
 * `database_unavailable` with `Retry-After: 1` at once, never a request left waiting. A server
 * listens first when what it serves needs its own address (the `iss` of what it signs), then
 * swaps this listener for its app's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A request listener answering 503 while `who` (e.g. `this gateway process`) starts. */
export function answerStarting(who: string): (req: IncomingMessage, res: ServerResponse) => void {
  const body = JSON.stringify({ error: `${who} is starting and cannot serve yet: try again in a second`, code: 'database_unavailable' });
  return (_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    res.end(body);
  };
}
