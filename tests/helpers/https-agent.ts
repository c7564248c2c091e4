/**
 * A published agent's server for tests: an https webhook on 127.0.0.1 with a self-signed
 * certificate made for the run (`openssl`), trusted by this process's fetch only (undici's global
 * dispatcher with that certificate as its CA). Published endpoints must be https (gateway §7).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Agent, setGlobalDispatcher } from 'undici';
import { useOpened } from './hooks.ts';

/** A running https webhook agent and the requests it received. */
export interface HttpsAgent {
  /** `https://127.0.0.1:<port>`. */
  url: string;
  /** Its self-signed certificate (PEM), for a client that must trust it explicitly (the hosted gateway's guarded client). */
  ca: string;
  received: Array<{ path: string; headers: IncomingHttpHeaders; body: string }>;
  close(): Promise<void>;
}

/** A self-signed certificate for `127.0.0.1`, made for the run with `openssl` (valid one day), and its key (PEM). */
export function selfSignedCertificate(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(path.join(tmpdir(), 'holon-tls-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'), '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
    ], { stdio: 'ignore' });
    return { key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts an https webhook answering every POST with `answer(path, body)` as JSON, and trusts its certificate. */
export async function startHttpsAgent(answer: (path: string, body: unknown) => unknown): Promise<HttpsAgent> {
  const { key, cert } = selfSignedCertificate();
  const received: HttpsAgent['received'] = [];
  const server: Server = createServer({ key, cert }, async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    received.push({ path: req.url ?? '', headers: req.headers, body });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer(req.url ?? '', body ? JSON.parse(body) : null)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  setGlobalDispatcher(new Agent({ connect: { ca: cert } }));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ca: cert.toString('utf8'),
    received,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** An https test agent answering with `answer`, started before the tests of the current scope and closed after them. */
export function useHttpsAgent(answer: (path: string, body: unknown) => unknown): HttpsAgent {
  return useOpened('the https test agent', () => startHttpsAgent(answer), (agent) => agent.close());
}
