/**
 * The fault proxy: an HTTP server of the kit's own between explore and the binding that, for
 * seeded random requests, loses an answer after the binding produced it (the client retries with
 * the same id, as §9 and §13 let it), delivers a request twice, delays it, or resets the
 * connection before it reaches the binding. Exactly-once effect is then checked against the model.
 * Which request meets which fault is a hash of the seed, the request with its history's id prefix
 * taken out, and the attempt: a request keeps its fault when shrinking drops the others around
 * it, and a retry is a new attempt. An answer the proxy touched carries
 * `x-holon-conformance-fault`, so the kit knows a replay answer is legitimate for it. To a
 * binding behind mutual TLS it connects with the config's credentials (issue 23 §4); the kit
 * talks to the proxy itself over plain http on loopback.
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import { readClientTls, type TlsFiles } from '../config.ts';

/** The faults `--faults` names. */
export const FAULT_KINDS = ['lost-answers', 'duplicates', 'delays', 'resets'] as const;

/** One fault kind. */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The header an answer the proxy touched carries, naming the fault. */
export const FAULT_HEADER = 'x-holon-conformance-fault';

/** Chance, in percent, that a request meets each enabled fault, by default (`--fault-rate`). */
export const DEFAULT_FAULT_PERCENT = 8;
/** Requests whose attempts the proxy counts before it forgets the oldest (memory bound). */
const MAX_TRACKED = 100_000;
/** Longest delay the `delays` fault adds, in milliseconds. */
const MAX_DELAY_MS = 25;
/** Largest request body the proxy forwards, in bytes (a history's bodies are well under 2 KiB). */
const MAX_BODY_BYTES = 64 * 1024;

/** A running proxy: its base URL, how many faults it injected by kind, and how to stop it. */
export interface FaultProxy {
  readonly url: string;
  readonly injected: Readonly<Record<FaultKind, number>>;
  close(): Promise<void>;
}

/** Parses `--faults a,b`; throws naming the first unknown kind. */
export function parseFaults(text: string): FaultKind[] {
  const kinds = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const kind of kinds) {
    if (!(FAULT_KINDS as readonly string[]).includes(kind)) throw new Error(`--faults: unknown fault ${kind}; choose from ${FAULT_KINDS.join(', ')}`);
  }
  return kinds as FaultKind[];
}

interface Forwarded { status: number; headers: Record<string, string>; body: Buffer }

/** Whether an answer's body says `applied: true` (§6). */
function appliedIn(body: Buffer): boolean {
  try {
    return (JSON.parse(body.toString('utf8')) as { applied?: unknown }).applied === true;
  } catch {
    return false;
  }
}

/** How the proxy draws: the seed, the chance per fault kind in percent, and the history id pattern to ignore. */
export interface FaultPlan {
  readonly seed: number;
  readonly percent: number;
  /** Matches a history's id prefix in a path or body, so the same request in a shorter history draws the same. */
  readonly prefix: RegExp;
}

/** Starts a proxy to `target` (reached with the TLS files `tls`, or none) on a free loopback port, injecting `faults` as `plan` draws them. */
export async function startFaultProxy(target: string, faults: readonly FaultKind[], plan: FaultPlan, tls: TlsFiles | null = null): Promise<FaultProxy> {
  const base = new URL(target);
  const credentials = tls === null ? {} : readClientTls(tls);
  const attempts = new Map<string, number>();
  const injected: Record<FaultKind, number> = { 'lost-answers': 0, duplicates: 0, delays: 0, resets: 0 };
  const forward = (req: IncomingMessage, body: Buffer): Promise<Forwarded> => new Promise((resolve, reject) => {
    const url = new URL(req.url ?? '/', base);
    const headers = { ...req.headers, host: url.host };
    delete headers.connection;
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const out = send(url, { method: req.method, headers, ...credentials }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const plain: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string' && k !== 'connection' && k !== 'transfer-encoding') plain[k] = v;
        resolve({ status: res.statusCode ?? 502, headers: plain, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    out.on('error', reject);
    out.end(body);
  });
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) throw new Error(`request body over ${MAX_BODY_BYTES} bytes`);
      chunks.push(chunk as Buffer);
    }
    const body = Buffer.concat(chunks);
    const exact = `${req.method} ${req.url} ${body.toString('utf8')}`;
    const attempt = (attempts.get(exact) ?? 0) + 1;
    if (attempts.size >= MAX_TRACKED) attempts.delete(attempts.keys().next().value as string);
    attempts.set(exact, attempt);
    const draw = (kind: FaultKind): number => {
      const digest = createHash('sha256').update(`${plan.seed}\n${kind}\n${attempt}\n${exact.replace(plan.prefix, '')}`).digest();
      return digest.readUInt32BE(0) / 0x1_0000_0000;
    };
    const hits = (kind: FaultKind): boolean => {
      if (!faults.includes(kind) || draw(kind) * 100 >= plan.percent) return false;
      injected[kind] += 1;
      return true;
    };
    const reset = hits('resets');
    const lose = !reset && hits('lost-answers');
    const twice = !reset && hits('duplicates');
    const delay = hits('delays') ? Math.floor(draw('delays') * 1_000_000) % (MAX_DELAY_MS + 1) : 0;
    if (reset) {
      req.socket.destroy();
      return;
    }
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    const answers = twice ? await Promise.all([forward(req, body), forward(req, body)]) : [await forward(req, body)];
    if (lose) {
      req.socket.destroy();
      return;
    }
    // Of two copies, the answer passed back is one that applied, if any: the copy that took effect
    // is the one whose answer speaks for the request, wherever it landed among the others in flight.
    const answer = answers.find((a) => appliedIn(a.body)) ?? (answers[0] as Forwarded);
    res.writeHead(answer.status, { ...answer.headers, ...(twice ? { [FAULT_HEADER]: 'duplicates' } : {}) });
    res.end(answer.body);
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: `holon-conformance fault proxy: ${(error as Error).message}` }));
      }
    });
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    injected,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
