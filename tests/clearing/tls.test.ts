/**
 * The hop to a remote binding (issue 23 §4): behind mutual TLS, the binding answers a caller whose
 * client certificate its CA signed, and refuses one without a certificate, or with one another CA
 * signed, with 403 `not_permitted` (the code of the clearing-contract §3 gate) and nothing else;
 * `/healthz` stays open. A binding told to listen off loopback without TLS does not start.
 * Certificates are made for the test with the openssl command line (`tests/helpers/certificates.ts`).
 */
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { startClearingServer, type RunningClearing } from '../../src/clearing/server.ts';
import { makeCertificates, type Certificates } from '../helpers/certificates.ts';

let certificates: Certificates;
let binding: RunningClearing;

before(async () => {
  certificates = makeCertificates();
  const url = process.env.DATABASE_URL;
  binding = await startClearingServer({ target: url ? { url } : { memory: true }, port: 0, tls: certificates.binding, logger: pino({ level: 'silent' }) });
});

after(async () => {
  await binding?.close();
  certificates?.remove();
});

/** GET `target` of the binding over TLS, trusting its CA, presenting `client` (a name of the certificates above) or no certificate. */
function get(target: string, client: 'gateway' | 'stranger' | null): Promise<{ status: number; body: any }> {
  const credentials = client ? { cert: certificates.pem(client, 'crt'), key: certificates.pem(client, 'key') } : {};
  return new Promise((resolve, reject) => {
    const req = request(`${binding.url}${target}`, { ca: certificates.pem('ca', 'crt'), ...credentials, agent: false }, (res) => {
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
