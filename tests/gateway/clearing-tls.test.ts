/**
 * The gateway's side of the hop to a remote binding (issue 23 §4): a gateway given its client
 * certificate, key and the binding's CA settles with a binding behind mutual TLS; a binding that
 * refuses the gateway's certificate (403 `not_permitted`) fails the call closed, 503
 * `clearing_unavailable`, nothing billed or held; a certificate from another CA stops the start;
 * and the channels that cannot be what the operator meant are refused at start-up: an `https://`
 * URL without credentials, credentials with an `http://` URL, half of the three settings, and in
 * production a binding off loopback without mutual TLS. Certificates: `tests/helpers/certificates.ts`.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Server as HttpsServer } from 'node:https';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { startClearingServer } from '../../src/clearing/server.ts';
import { checkClearingChannel, clearingClientTlsFromEnv, ClearingUnreachable, HttpClearingPort } from '../../src/gateway/clearing.ts';
import { readSettings } from '../../src/hosted/settings.ts';
import { startHostedGateway } from '../../src/serve/hosted.ts';
import { makeCertificates } from '../helpers/certificates.ts';
import { deltas, freshStore, startFreshDevGateway, startTestGateway, storeTarget } from '../helpers/gateway.ts';
import { withEnv, useOpened } from '../helpers/hooks.ts';
import { PRODUCTION_ENV } from '../helpers/hosted.ts';

const certificates = makeCertificates();
after(() => certificates.remove());
const silent = pino({ level: 'silent' });

const binding = useOpened(
  'the binding behind mutual TLS',
  async () => startClearingServer({ target: storeTarget(await freshStore(), 'clearing'), port: 0, tls: certificates.binding, logger: silent }),
  (running) => running.close(),
);
const gw = useOpened('the gateway', () => startTestGateway({ clearing_url: binding.url, clearing_tls: certificates.client('gateway') }), (gateway) => gateway.close());

/** Makes the binding trust `ca` for client certificates from its next connection on (new ticket keys: no session resumes past the change). */
function trustClients(ca: string): void {
  const server = binding.server as unknown as HttpsServer;
  server.setSecureContext({ cert: certificates.binding.cert, key: certificates.binding.key, ca, ticketKeys: randomBytes(48) });
  server.closeAllConnections();
}

describe('a gateway with its client certificate', () => {
  test('settles through the binding over https: the call is billed and the binding moves the exact micro-units', async () => {
    assert.match(gw.running.clearing_url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const mandate = await gw.mandate();
    const before = await gw.balances([mandate.payer, 'gt', 'platform:fees']);
    const response = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} });
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.equal(response.body.receipt.billed, true);
    assert.equal(response.body.receipt.cost.total, '0.10');
    const after = await gw.balances([mandate.payer, 'gt', 'platform:fees']);
    assert.deepEqual(deltas(before, after), { [mandate.payer]: -100_000, gt: 90_000, 'platform:fees': 10_000 });
    assert.equal(await gw.reserved(mandate.payer), 0);
  });

  test('a binding that stops accepting it: 503 clearing_unavailable naming not_permitted, nothing billed or held; accepted again, the next call is billed', async () => {
    const mandate = await gw.mandate();
    const before = await gw.balances([mandate.payer, 'gt', 'platform:fees']);
    trustClients(certificates.pem('other-ca', 'crt'));
    try {
      const response = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} });
      assert.equal(response.status, 503, JSON.stringify(response.body));
      assert.equal(response.body.code, 'clearing_unavailable');
      assert.match(response.body.error, /^the clearing binding does not accept this gateway as a caller \(403 not_permitted\) for open-hold \S+: this binding answers only callers with a client certificate its CA signed/);
      assert.equal(response.body.receipt.billed, false);
    } finally {
      trustClients(certificates.pem('ca', 'crt'));
    }
    await gw.settle();
    assert.deepEqual(deltas(before, await gw.balances([mandate.payer, 'gt', 'platform:fees'])), { [mandate.payer]: 0, gt: 0, 'platform:fees': 0 });
    assert.equal(await gw.reserved(mandate.payer), 0);
    const next = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: {} });
    assert.equal(next.status, 200, JSON.stringify(next.body));
    assert.deepEqual(deltas(before, await gw.balances([mandate.payer, 'gt', 'platform:fees'])), { [mandate.payer]: -100_000, gt: 90_000, 'platform:fees': 10_000 });
  });
});

describe('without the right credentials', () => {
  test('no client certificate and no CA: the binding cannot even be reached (its certificate is not trusted)', async () => {
    await assert.rejects(new HttpClearingPort(binding.url).readBalance('gt'), (error: unknown) => {
      assert.ok(error instanceof ClearingUnreachable);
      assert.match(error.message, /^the clearing binding could not be reached for read-balance of gt: fetch failed \(self-signed certificate in certificate chain\)$/);
      return true;
    });
  });

  test('a client certificate another CA signed: the gateway does not start, naming the refusal', async () => {
    // A gateway that starts after all is closed, so the failure is reported rather than left running.
    const refusal = await startTestGateway({ clearing_url: binding.url, clearing_tls: certificates.client('stranger') }).then(async (started) => {
      await started.close();
      return new Error('the gateway started');
    }, (error: unknown) => error);
    assert.match(String(refusal), /the clearing binding does not accept this gateway as a caller \(403 not_permitted\) for create-account \S+: this binding answers only callers with a client certificate its CA signed; none was presented or it was not accepted/);
  });

  test('an https binding URL without the gateway\'s credentials: refused at start-up', async () => {
    await assert.rejects(startTestGateway({ clearing_url: binding.url }), new RegExp(`^Error: the clearing binding ${binding.url.replaceAll('.', '\\.')} is reached over TLS: set HOLON_CLEARING_CLIENT_CERT, HOLON_CLEARING_CLIENT_KEY, HOLON_CLEARING_CA \\(the gateway's client certificate and key, and the CA that signed the binding's certificate\\)$`));
  });
});

describe('start-up refusals', () => {
  const gatewayTls = () => certificates.client('gateway');

  test('which URL may go with which credentials', () => {
    assert.throws(() => checkClearingChannel('https://binding.example:4100', null, false), /^Error: the clearing binding https:\/\/binding\.example:4100 is reached over TLS: set HOLON_CLEARING_CLIENT_CERT/);
    assert.throws(() => checkClearingChannel('http://127.0.0.1:4100', gatewayTls(), false), /^Error: HOLON_CLEARING_CLIENT_CERT, HOLON_CLEARING_CLIENT_KEY, HOLON_CLEARING_CA are set but the clearing binding http:\/\/127\.0\.0\.1:4100 is plain http: a client certificate is only presented over TLS; give its https:\/\/ URL$/);
    assert.throws(() => checkClearingChannel('http://binding.example:4100', null, true), /^Error: refusing to start: the clearing binding http:\/\/binding\.example:4100 is not on loopback, and in production a remote binding is reached only over mutual TLS/);
    // Allowed: loopback in production, https with mutual TLS anywhere, and (as before) plain http off loopback outside production.
    for (const [url, tls, production] of [['http://127.0.0.1:4100', null, true], ['http://localhost:4100', null, true], ['http://[::1]:4100', null, true], ['https://binding.example:4100', gatewayTls(), true], ['http://10.0.0.5:4100', null, false]] as const) {
      assert.doesNotThrow(() => checkClearingChannel(url, tls, production), url);
    }
  });

  test('the three settings go together: none is no mutual TLS, all three are read, one alone is refused naming the others', () => {
    assert.equal(clearingClientTlsFromEnv({}), null);
    const files = { HOLON_CLEARING_CLIENT_CERT: certificates.file('gateway', 'crt'), HOLON_CLEARING_CLIENT_KEY: certificates.file('gateway', 'key'), HOLON_CLEARING_CA: certificates.file('ca', 'crt') };
    assert.deepEqual(clearingClientTlsFromEnv(files), gatewayTls());
    assert.throws(() => clearingClientTlsFromEnv({ HOLON_CLEARING_CLIENT_CERT: files.HOLON_CLEARING_CLIENT_CERT }), /^Error: mutual TLS needs HOLON_CLEARING_CLIENT_CERT, HOLON_CLEARING_CLIENT_KEY, HOLON_CLEARING_CA together; HOLON_CLEARING_CLIENT_KEY, HOLON_CLEARING_CA are not set$/);
    assert.throws(() => clearingClientTlsFromEnv({ ...files, HOLON_CLEARING_CA: '/nonexistent/ca.crt' }), /^Error: HOLON_CLEARING_CA=\/nonexistent\/ca\.crt cannot be read: ENOENT$/);
  });

  test('holon serve reads them from the environment: a client certificate with an http binding does not start', async () => {
    const env = { HOLON_CLEARING_CLIENT_CERT: certificates.file('gateway', 'crt'), HOLON_CLEARING_CLIENT_KEY: certificates.file('gateway', 'key'), HOLON_CLEARING_CA: certificates.file('ca', 'crt') };
    await assert.rejects(withEnv(env, () => startFreshDevGateway({ clearing_url: 'http://127.0.0.1:9' })), /is plain http: a client certificate is only presented over TLS/);
  });

  test('the hosted gateway in production with a binding off loopback and no mutual TLS does not start', async () => {
    const settings = readSettings(PRODUCTION_ENV);
    await assert.rejects(
      startHostedGateway({ port: 0, db: 'unused', settings, clearing_url: 'http://binding.example:4100', agents_host_port: null, logger: silent }),
      /^Error: refusing to start: the clearing binding http:\/\/binding\.example:4100 is not on loopback, and in production a remote binding is reached only over mutual TLS: give its https:\/\/ URL and set HOLON_CLEARING_CLIENT_CERT, HOLON_CLEARING_CLIENT_KEY, HOLON_CLEARING_CA$/,
    );
  });
});
