/**
 * The hop to a remote binding (issue 23 §4): behind mutual TLS, the binding answers a caller whose
 * client certificate its CA signed, and refuses one without a certificate, or with one another CA
 * signed, with 403 `not_permitted` (the code of the clearing-contract §3 gate) and nothing else;
 * `/healthz` stays open. A binding told to listen off loopback without TLS does not start.
 * Certificates are made for the test with the openssl command line (EC P-256, valid one day).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { startClearingServer, type RunningClearing } from '../../src/clearing/server.ts';
import type { MutualTls } from '../../src/clearing/tls.ts';

let dir: string;
let binding: RunningClearing;
const pem: Record<string, string> = {};

/** Runs openssl in the test's directory. */
const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });

/** A key and a certificate `name`, for `subject`, signed by the CA (or self-signed with `selfSigned`). */
function issue(name: string, subject: string, extensions: string, selfSigned = false): void {
  openssl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
  const signer = selfSigned ? ['-signkey', `${name}.key`] : ['-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial'];
  execFileSync('sh', ['-c', `printf '%s' "${extensions}" > ${name}.ext`], { cwd: dir });
  openssl('x509', '-req', '-in', `${name}.csr`, ...signer, '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`);
}

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'holon-tls-'));
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=holon test CA', '-days', '1');
  issue('binding', '/CN=binding', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth');
  issue('gateway', '/CN=gateway', 'extendedKeyUsage=clientAuth');
  issue('stranger', '/CN=stranger', 'extendedKeyUsage=clientAuth', true);
  for (const name of ['ca.crt', 'binding.crt', 'binding.key', 'gateway.crt', 'gateway.key', 'stranger.crt', 'stranger.key']) pem[name] = await readFile(path.join(dir, name), 'utf8');
  const tls: MutualTls = { cert: pem['binding.crt'], key: pem['binding.key'], ca: pem['ca.crt'] };
  const url = process.env.DATABASE_URL;
  binding = await startClearingServer({ target: url ? { url } : { memory: true }, port: 0, tls, logger: pino({ level: 'silent' }) });
});

after(async () => {
  await binding?.close();
  await rm(dir, { recursive: true, force: true });
});

/** GET `target` of the binding over TLS, trusting its CA, presenting `client` (a name of the certificates above) or no certificate. */
function get(target: string, client: 'gateway' | 'stranger' | null): Promise<{ status: number; body: any }> {
  const credentials = client ? { cert: pem[`${client}.crt`], key: pem[`${client}.key`] } : {};
  return new Promise((resolve, reject) => {
    const req = request(`${binding.url}${target}`, { ca: pem['ca.crt'], ...credentials, agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('a caller with a certificate the binding CA signed is served over https', async () => {
  assert.match(binding.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const answer = await get('/internal/ledger/checkpoint', 'gateway');
  assert.equal(answer.status, 200);
  assert.deepEqual(Object.keys(answer.body).sort(), ['head', 'jws', 'signed_at', 'size']);
});

test('no client certificate, or one another CA signed: 403 not_permitted, the §3 code, naming what is missing', async () => {
  for (const client of [null, 'stranger'] as const) {
    const answer = await get('/internal/ledger/checkpoint', client);
    assert.equal(answer.status, 403, String(client));
    assert.equal(answer.body.code, 'not_permitted');
    assert.match(answer.body.error, /^this binding answers only callers with a client certificate its CA signed; none was presented or it was not accepted/);
  }
});

test('/healthz needs no certificate (contract §3 Health)', async () => {
  assert.deepEqual(await get('/healthz', null), { status: 200, body: { ok: true } });
});

test('a binding told to listen off loopback without mutual TLS refuses to start', async () => {
  await assert.rejects(startClearingServer({ target: { memory: true }, port: 0, host: '0.0.0.0', logger: pino({ level: 'silent' }) }), /a binding listening on 0\.0\.0\.0 must authenticate its callers: set HOLON_CLEARING_TLS_CERT, HOLON_CLEARING_TLS_KEY and HOLON_CLEARING_TLS_CA/);
});
