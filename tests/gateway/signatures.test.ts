/**
 * Issue 23 §1, §2, §3 through a running gateway: `GET /v0/mandates/{issuer}/{name}` answers the
 * mandate's JWS, every receipt answered (`GET /v0/receipts/{id}`, `GET /v0/receipts`,
 * `POST /v0/calls`) is signed over its children's digests, the binding in the gateway's process
 * signs its checkpoints with the same key, `/.well-known/jwks.json` lists it; `verifyMandate` /
 * `verifyReceipt` / `verifyCheckpoint` of the client and `holon verify` accept them and refuse each
 * tampering with its reason.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import supertest from 'supertest';
import { verifyCheckpoint, verifyMandate, verifyReceipt, VerificationError, type SignedReceiptTree } from '../../clients/src/index.ts';
import { openSigner } from '../../src/signing/signer.ts';
import { holon } from '../helpers/cli.ts';
import { useTestGateway } from '../helpers/gateway.ts';
import { setUp } from '../helpers/hooks.ts';

const gw = useTestGateway();
let dir = '';
setUp(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'holon-verify-'));
});
after(() => rm(dir, { recursive: true, force: true }));

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const claimsOf = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[1], 'base64url').toString());
/** The same JWS with its payload changed and its signature kept. */
const withPayload = (jws: string, change: (claims: any) => void) => {
  const [header, , signature] = jws.split('.');
  const claims = claimsOf(jws);
  change(claims);
  return `${header}.${b64(claims)}.${signature}`;
};
const refusal = async (check: Promise<unknown>, code: string, message: RegExp) => {
  await assert.rejects(check, (error: unknown) => {
    assert.ok(error instanceof VerificationError, String(error));
    assert.equal(error.code, code);
    assert.match(error.message, message);
    return true;
  });
};

async function jwks() {
  const response = await gw.http.get('/.well-known/jwks.json').expect(200);
  return response.body;
}

async function signedMandate(fields: Record<string, unknown> = {}) {
  const mandate = await gw.mandate(fields);
  const response = await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200);
  return { id: mandate.id, body: response.body };
}

test('a mandate is signed: iss the gateway, kid in the JWKS, exp its expiry, the JSON beside it equal', async () => {
  const expires_at = new Date(Math.ceil(Date.now() / 1000) * 1000 + 86_400_000).toISOString();
  const { id, body } = await signedMandate({ expires_at });
  const keys = await jwks();
  assert.equal(keys.keys.length, 1);
  assert.deepEqual(Object.keys(keys.keys[0]).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x']);
  const [header] = body.jws.split('.');
  assert.deepEqual(JSON.parse(Buffer.from(header, 'base64url').toString()), { alg: 'EdDSA', kid: keys.keys[0].kid, typ: 'holon-mandate+jwt' });
  const claims = await verifyMandate(body.jws, keys, { json: body.mandate, issuer: gw.running.url });
  assert.equal(claims.sub, id);
  assert.equal(claims.iss, gw.running.url);
  assert.equal(claims.exp, Date.parse(expires_at) / 1000);
  assert.deepEqual(claims.mandate, body.mandate);
  // The payload is the canonical JSON (RFC 8785): keys sorted, no spaces.
  const payload = Buffer.from(body.jws.split('.')[1], 'base64url').toString();
  assert.equal(payload.slice(0, 6), '{"exp"');
  assert.ok(!payload.includes(' '));
});

test('a mandate with one field changed is refused: in the JWS (bad signature) or in the JSON beside it', async () => {
  const { body } = await signedMandate();
  const keys = await jwks();
  const widened = withPayload(body.jws, (claims) => {
    claims.mandate.budget.total = '1000.00';
  });
  await refusal(verifyMandate(widened, keys), 'bad_signature', /does not match the signed text: it was changed after signing/);
  const json = structuredClone(body.mandate);
  json.budget.total = '1000.00';
  await refusal(verifyMandate(body.jws, keys, { json }), 'json_differs', /differs from the signed mandate/);
});

test('a key not in the JWKS, an expired key and an expired mandate are refused, naming the key', async () => {
  const { body } = await signedMandate();
  const keys = await jwks();
  const kid = keys.keys[0].kid;
  const other = await openSigner(gw.running.db.knex, { file_secret: null, issuer: 'https://elsewhere.example' });
  await refusal(verifyMandate(body.jws, await other.jwks()), 'key_not_in_jwks', new RegExp(`signed with key ${kid}, which the JWKS does not list`));
  const expired = { keys: [{ ...keys.keys[0], exp: Math.floor(Date.now() / 1000) - 60 }] };
  await refusal(verifyMandate(body.jws, expired), 'key_expired', new RegExp(`key ${kid}, which expired at`));
  // Still listed for a while: valid until its exp.
  assert.equal((await verifyMandate(body.jws, { keys: [{ ...keys.keys[0], exp: Math.floor(Date.now() / 1000) + 60 }] })).sub, body.mandate.id);
  const soon = await signedMandate({ expires_at: new Date(Date.now() + 60_000).toISOString() });
  await refusal(verifyMandate(soon.body.jws, keys, { now: new Date(Date.now() + 120_000) }), 'expired', /the mandate expired at/);
  await refusal(verifyMandate(body.jws, keys, { issuer: 'https://holon.example' }), 'wrong_issuer', /not https:\/\/holon\.example/);
});

/** A delegating call (gto/pass calling gt/free twice) and its signed tree. */
async function signedTree(): Promise<SignedReceiptTree> {
  const mandate = await gw.mandate();
  const call = await gw.call({ mandate: mandate.id, agent: 'gto/pass', input: { calls: [{ agent: 'gt/free' }, { agent: 'gt/run' }] } });
  assert.equal(call.status, 200);
  return (await gw.http.get(`/v0/receipts/${call.body.receipt.id}`).expect(200)).body;
}

test('a receipt tree verifies as one; no receipt holds an input or an output', async () => {
  const tree = await signedTree();
  const keys = await jwks();
  assert.deepEqual(await verifyReceipt(tree, keys), { receipts: 3 });
  const claims = claimsOf(tree.jws!);
  assert.deepEqual(claims.children.map((child: { id: string }) => child.id), tree.calls.map((call) => call.id));
  for (const node of [tree, ...tree.calls]) {
    const signed = claimsOf(node.jws!).receipt;
    assert.ok(!('input' in signed) && !('output' in signed), `receipt ${node.id} holds no input or output`);
  }
});

test('a receipt tree with a child removed, altered or added is refused, naming the receipt', async () => {
  const tree = await signedTree();
  const keys = await jwks();
  const [first, second] = tree.calls;
  await refusal(verifyReceipt({ ...tree, calls: [second] }, keys), 'child_missing', new RegExp(`receipt ${tree.id}'s signature covers child ${first.id} at position 1`));
  await refusal(verifyReceipt({ ...tree, calls: [first] }, keys), 'child_missing', new RegExp(`covers child ${second.id} at position 2`));
  const cheaper = { ...second, cost: { own: '0.00', downstream: '0.00', total: '0.00' } };
  await refusal(verifyReceipt({ ...tree, calls: [first, cheaper] }, keys), 'json_differs', new RegExp(`receipt ${second.id}: its JSON differs from the signed receipt`));
  const resigned = { ...second, jws: withPayload(second.jws!, (claims) => (claims.receipt.cost.total = '0.00')) };
  await refusal(verifyReceipt({ ...tree, calls: [first, resigned] }, keys), 'child_altered', new RegExp(`covers child ${second.id} with digest`));
  await refusal(verifyReceipt({ ...tree, calls: [first, second, first] }, keys), 'child_unsigned', new RegExp(`holds child ${first.id}, which its signature does not cover`));
  await refusal(verifyReceipt({ ...tree, status: 'failed' }, keys), 'json_differs', new RegExp(`receipt ${tree.id}: its JSON differs`));
});

test('a call answer and a receipt list carry every receipt signed: each verifies with verifyReceipt, one field changed is refused', async () => {
  const keys = await jwks();
  const mandate = await gw.mandate();
  const paid = await gw.call({ mandate: mandate.id, agent: 'gto/pass', input: { calls: [{ agent: 'gt/free' }] } });
  assert.equal(paid.status, 200);
  assert.deepEqual(await verifyReceipt(paid.body.receipt, keys), { receipts: 2 });
  // A refused call's answer carries its receipt signed too.
  const failed = await gw.call({ mandate: mandate.id, agent: 'gt/run', input: { do: 'unbilled_error' } });
  assert.equal(failed.status, 502);
  assert.deepEqual(await verifyReceipt(failed.body.receipt, keys), { receipts: 1 });

  const page = (await gw.http.get('/v0/receipts').query({ mandate: mandate.id, limit: 10 }).expect(200)).body;
  assert.deepEqual(page.receipts.map((tree: SignedReceiptTree) => tree.id), [failed.body.receipt.id, paid.body.receipt.id]);
  for (const tree of page.receipts) assert.ok((await verifyReceipt(tree, keys)).receipts >= 1);
  assert.deepEqual(await verifyReceipt(page.receipts[1], keys), { receipts: 2 });
  const listed = page.receipts[1] as SignedReceiptTree;
  await refusal(verifyReceipt({ ...listed, billed: !listed.billed }, keys), 'json_differs', new RegExp(`receipt ${listed.id}: its JSON differs from the signed receipt`));
  const answered = paid.body.receipt as SignedReceiptTree;
  await refusal(verifyReceipt({ ...answered, cost: { own: '0.00', downstream: '0.00', total: '0.00' } }, keys), 'json_differs', new RegExp(`receipt ${answered.id}: its JSON differs`));
});

test("the binding in the gateway's process signs its checkpoints with the gateway's key and lists the gateway's JWKS", async () => {
  const keys = await jwks();
  const binding = supertest(gw.running.clearing_url);
  assert.deepEqual((await binding.get('/.well-known/jwks.json').expect(200)).body, keys);
  const checkpoint = (await binding.get('/internal/ledger/checkpoint').expect(200)).body;
  const claims = await verifyCheckpoint(checkpoint.jws, keys);
  assert.deepEqual({ size: claims.size, head: claims.head, signed_at: claims.signed_at, sub: claims.sub, iss: claims.iss }, { size: checkpoint.size, head: checkpoint.head, signed_at: checkpoint.signed_at, sub: 'journal', iss: gw.running.url });
  assert.deepEqual(JSON.parse(Buffer.from(checkpoint.jws.split('.')[0], 'base64url').toString()), { alg: 'EdDSA', kid: keys.keys[0].kid, typ: 'holon-checkpoint+jwt' });
  // A mandate's JWS is no checkpoint, and a checkpoint with its size changed fails its signature.
  await refusal(verifyCheckpoint((await signedMandate()).body.jws, keys), 'wrong_type', /is not a holon-checkpoint\+jwt document/);
  await refusal(verifyCheckpoint(withPayload(checkpoint.jws, (fields) => (fields.size += 1)), keys), 'bad_signature', /the checkpoint: the signature of key k-[0-9a-f-]+ does not match the signed text/);
});

test('holon verify: a mandate and a receipt tree from files, a sub-mandate against its parent, a widened one refused', async () => {
  const keys = await jwks();
  const jwksFile = path.join(dir, 'jwks.json');
  await writeFile(jwksFile, JSON.stringify(keys));
  const { id, body } = await signedMandate();
  const parentFile = path.join(dir, 'parent.json');
  await writeFile(parentFile, JSON.stringify(body));
  const ok = await holon(['verify', 'mandate', parentFile, '--jwks', `${gw.running.url}/.well-known/jwks.json`]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, new RegExp(`^mandate ${id}: signed by ${gw.running.url} at `));

  const call = await gw.call({ mandate: id, agent: 'gto/pass', input: { calls: [{ agent: 'gt/free' }] } });
  const tree = (await gw.http.get(`/v0/receipts/${call.body.receipt.id}`).expect(200)).body;
  const treeFile = path.join(dir, 'tree.json');
  await writeFile(treeFile, JSON.stringify(tree));
  const receipt = await holon(['verify', 'receipt', treeFile, '--jwks', jwksFile]);
  assert.equal(receipt.code, 0, receipt.stderr);
  assert.equal(receipt.stdout, `receipt ${tree.id}: 2 receipts signed and whole\n`);

  const childFile = path.join(dir, 'child.jws');
  await writeFile(childFile, tree.sub_mandate_jws);
  const narrower = await holon(['verify', 'mandate', childFile, '--parent', parentFile, '--jwks', jwksFile]);
  assert.equal(narrower.code, 0, narrower.stderr);
  assert.match(narrower.stdout, new RegExp(`^mandate ${id}\\.${tree.id}: signed by .*; no wider than its parent ${id}\\n$`));

  // A widened sub-mandate, signed by a key the JWKS lists (a gateway that would derive one): refused by the §3 check.
  const signer = await openSigner(gw.running.db.knex, { file_secret: null, issuer: gw.running.url });
  const parent = claimsOf(body.jws).mandate;
  const child = claimsOf(tree.sub_mandate_jws).mandate;
  const wide = await signer.sign({ sub: child.id, mandate: { ...child, budget: { ...child.budget, total: '50.00' } } }, 'holon-mandate+jwt');
  const parentJws = await signer.sign({ sub: parent.id, mandate: parent }, 'holon-mandate+jwt');
  await writeFile(path.join(dir, 'wide.jws'), wide);
  await writeFile(path.join(dir, 'parent.jws'), parentJws);
  await writeFile(path.join(dir, 'own.json'), JSON.stringify(await signer.jwks()));
  const widened = await holon(['verify', 'mandate', path.join(dir, 'wide.jws'), '--parent', path.join(dir, 'parent.jws'), '--jwks', path.join(dir, 'own.json')]);
  assert.equal(widened.code, 1);
  assert.equal(widened.stderr, `holon verify: mandate ${child.id} widens its parent ${id} at budget.total: the child's total 50.00 EUR exceeds the parent's 10.00 EUR\n`);

  // The parent's JSON edited beside its signature, and a key the JWKS does not list.
  await writeFile(parentFile, JSON.stringify({ ...body, mandate: { ...body.mandate, grantee: 'mallory/bot' } }));
  const edited = await holon(['verify', 'mandate', parentFile, '--jwks', jwksFile]);
  assert.equal(edited.code, 1);
  assert.equal(edited.stderr, `holon verify: mandate ${id}: the JSON beside the signature differs from the signed mandate: trust only the signed one\n`);
  const stranger = await holon(['verify', 'mandate', path.join(dir, 'wide.jws'), '--jwks', jwksFile]);
  assert.equal(stranger.code, 1);
  assert.match(stranger.stderr, /^holon verify: the mandate was signed with key k-[0-9a-f-]+, which the JWKS does not list/);
});
