/**
 * A binding run alone (`holon clearing serve`, its own database) signs its journal's checkpoints
 * with its own keys (issue 23 §3): stored sealed under the file secret in its database, listed at
 * its `/.well-known/jwks.json`, the same after a restart. A hosted gateway settling with it signs
 * the binding's point again with the gateway's key at `GET /v0/journal/checkpoint`, so the admin
 * verifies it with the gateway's JWKS, which does not list the binding's key.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import supertest from 'supertest';
import { VerificationError, verifyCheckpoint } from '../../clients/src/verify.ts';
import { startClearingServer } from '../../src/clearing/server.ts';
import { freshStore, storeTarget } from '../helpers/gateway.ts';
import { ADMIN_KEY, bearer, startTestHosted } from '../helpers/hosted.ts';

const FILE_SECRET = 'binding-test-file-secret-0123456789abcdef';

test("a binding run alone signs with its own stored key; the hosted gateway's checkpoint is signed again with the gateway's", async () => {
  const target = storeTarget(await freshStore(), 'clearing');
  const start = () => startClearingServer({ target, port: 0, file_secret: FILE_SECRET, logger: pino({ level: 'silent' }) });
  let binding = await start();
  const own = (await supertest(binding.url).get('/.well-known/jwks.json').expect(200)).body;
  assert.equal(own.keys.length, 1);
  await binding.close();
  binding = await start();
  let hosted;
  try {
    const keys = (await supertest(binding.url).get('/.well-known/jwks.json').expect(200)).body;
    assert.deepEqual(keys, own, 'the stored key, the same after a restart');
    const checkpoint = (await supertest(binding.url).get('/internal/ledger/checkpoint').expect(200)).body;
    const claims = await verifyCheckpoint(checkpoint.jws, keys);
    assert.equal(claims.iss, binding.url);

    hosted = await startTestHosted({ clearing_url: binding.url });
    const signed = (await hosted.http.get('/v0/journal/checkpoint').set(bearer(ADMIN_KEY)).expect(200)).body;
    const gatewayKeys = (await hosted.http.get('/.well-known/jwks.json').expect(200)).body;
    const resigned = await verifyCheckpoint(signed.jws, gatewayKeys);
    assert.equal(resigned.iss, hosted.settings.public_url ?? hosted.running.url);
    assert.ok(resigned.size >= claims.size, `the journal only grows: ${resigned.size} after ${claims.size}`);
    assert.deepEqual({ size: signed.size, head: signed.head }, { size: resigned.size, head: resigned.head });
    // The binding's own signature is not the gateway's: its key is not in the gateway's JWKS.
    await assert.rejects(verifyCheckpoint(checkpoint.jws, gatewayKeys), (error: unknown) => error instanceof VerificationError && error.code === 'key_not_in_jwks');
  } finally {
    await hosted?.close();
    await binding.close();
  }
});
