/**
 * A root mandate's id has no dot (gateway §3, issue 26): a dot joins a derived sub-mandate to its
 * parent (`alice/q4.r4`), so `rootMandateOf` alone decides an id's root. A root id with a dot is
 * refused where roots are stored (`POST /v0/mandates`, the dev gateway's mandate files), and one
 * stored before the rule is read by no door, so its calls can never be counted under another root.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { isRootMandateId, rootMandateOf, validateMandate, validateRootMandate } from '../../src/contracts/mandate.ts';
import { ContractError } from '../../src/contracts/errors.ts';
import { freshStore, startTestGateway } from '../helpers/gateway.ts';
import { bearer, useHostedAccount, useTestHosted } from '../helpers/hosted.ts';

/** A valid root mandate document with id `id`, issued by `issuer`. */
const rootDocument = (id: string, issuer = 'alice') => ({ id, issuer, grantee: `${issuer}/bot`, allow: { agents: ['*'] }, budget: { total: '1.00', currency: 'EUR' } });

/** The sentence a dotted root id is refused with. */
const dotted = (id: string, root: string, suggestion: string) =>
  `id: "${id}" has a dot, and a root mandate's id has none: a dot joins a sub-mandate derived for a run to its parent, so "${id}" would read as derived from "${root}". Name it without a dot, e.g. "${suggestion}"`;

describe('rootMandateOf (gateway §3)', () => {
  const segment = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-'), minLength: 1, maxLength: 20 });
  const rootId = fc.tuple(segment, segment).map(([ns, name]) => `${ns}/${name}`);

  test('a root id is its own root; any id derived from it, at any depth, has it as root', () => {
    fc.assert(fc.property(rootId, (root) => rootMandateOf(root) === root && isRootMandateId(root)));
    fc.assert(
      fc.property(rootId, fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (root, r1, r2) => {
        return rootMandateOf(`${root}.${r1}`) === root && rootMandateOf(`${root}.${r1}.${r2}`) === root && !isRootMandateId(`${root}.${r1}`);
      }),
    );
  });

  test('roots that share a prefix stay apart', () => {
    assert.equal(rootMandateOf('alice/q4-2026'), 'alice/q4-2026');
    assert.equal(rootMandateOf('alice/q4x.r7'), 'alice/q4x');
    assert.equal(rootMandateOf('alice/q4.r7.r9'), 'alice/q4');
  });

  test('validateRootMandate refuses a dotted id with invalid_mandate on field id; a derived document still validates as one', () => {
    assert.throws(
      () => validateRootMandate(rootDocument('alice/v1.5')),
      (error: unknown) => error instanceof ContractError && error.code === 'invalid_mandate' && error.field === 'id' && error.message === dotted('alice/v1.5', 'alice/v1', 'alice/v1-5'),
    );
    assert.equal(validateRootMandate(rootDocument('alice/v1-5')).id, 'alice/v1-5');
    assert.equal(validateMandate({ ...rootDocument('alice/q4.r4'), issuer: 'alice/bot', grantee: 'acme/extract@1.0.0' }).id, 'alice/q4.r4');
  });

  test('every dev mandate in examples/mandates is a valid root mandate', async () => {
    const dir = path.join('examples', 'mandates');
    const files = (await readdir(dir)).filter((file) => file.endsWith('.yaml'));
    assert.ok(files.length > 0);
    for (const file of files) validateRootMandate(parseYaml(await readFile(path.join(dir, file), 'utf8')));
  });
});

describe('the dev gateway refuses a mandate file with a dotted root id at start-up', () => {
  test('one line naming the file; nothing starts', async () => {
    const store = await freshStore();
    const file = path.join(store.db, 'mandates', 'v15.yaml');
    try {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, 'id: dev/v1.5\nissuer: dev\ngrantee: dev/cli\nallow: { agents: ["*"] }\nbudget: { total: "1.00", currency: EUR }\n');
      // A gateway that starts anyway is closed, so the failure is the assertion, not a hang.
      const refusal = await startTestGateway({ store }).then(
        async (gw) => {
          await gw.close();
          return null;
        },
        (error: Error) => error.message,
      );
      assert.equal(refusal, `${file}: ${dotted('dev/v1.5', 'dev/v1', 'dev/v1-5')}`);
    } finally {
      await rm(store.db, { recursive: true, force: true });
    }
  });
});

describe('hosted: a root id with a dot', () => {
  const hosted = useTestHosted();
  const alice = useHostedAccount(hosted);
  const call = (mandate: string, agent = 'gt/free', input: object = {}) => hosted.http.post('/v0/calls').set(bearer(alice.human)).send({ mandate, agent, input });
  const listed = async (mandate: string) => {
    const response = await hosted.http.get('/v0/receipts').query({ mandate }).set(bearer(alice.human)).expect(200);
    return response.body.receipts as Array<{ id: string; mandate: string; calls: Array<{ mandate: string }> }>;
  };

  test('POST /v0/mandates refuses it 422 invalid_mandate and stores nothing', async () => {
    for (const id of ['v1.5', `${alice.handle}/v1.5`]) {
      const response = await hosted.http.post('/v0/mandates').set(bearer(alice.human)).send({ id, grantee: `${alice.handle}/bot`, allow: { agents: ['*'] }, budget: { total: '1.00' } });
      assert.equal(response.status, 422, JSON.stringify(response.body));
      assert.equal(response.body.code, 'invalid_mandate');
      assert.equal(response.body.error, dotted(`${alice.handle}/v1.5`, `${alice.handle}/v1`, `${alice.handle}/v1-5`));
    }
    assert.equal((await hosted.running.db.knex('gateway_mandates').where('id', 'like', `${alice.handle}/v1%`)).length, 0);
    const me = await hosted.http.get('/v0/me').set(bearer(alice.human)).expect(200);
    assert.deepEqual(me.body.mandates, [`${alice.handle}/sandbox`]);
  });

  test('?mandate=<h>/q4 lists q4 and what derives from it, never q4-2026 nor a dotted root stored before the rule', async () => {
    const mandate = (name: string) => ({ id: name, grantee: `${alice.handle}/bot`, allow: { agents: ['*'], capabilities: ['*'] }, budget: { total: '2.00' } });
    await hosted.http.post('/v0/mandates').set(bearer(alice.human)).send(mandate('q4')).expect(201);
    await hosted.http.post('/v0/mandates').set(bearer(alice.human)).send(mandate('q4-2026')).expect(201);
    // A root stored with a dot before the rule, as POST /v0/mandates used to store it.
    const legacy = `${alice.handle}/q4.2026`;
    const document = { ...mandate(legacy), issuer: alice.handle, budget: { total: '2.00', currency: 'EUR', fx: hosted.settings.fx } };
    await hosted.running.db.knex('gateway_mandates').insert({ id: legacy, document: JSON.stringify(document), parent: null, payer: alice.handle, currency: 'EUR', total_micros: 2_000_000 });

    const q4 = await call(`${alice.handle}/q4`, 'gto/pass', { calls: [{ agent: 'gt/free', input: {} }] });
    assert.equal(q4.status, 200, JSON.stringify(q4.body));
    const q4_2026 = await call(`${alice.handle}/q4-2026`);
    assert.equal(q4_2026.status, 200, JSON.stringify(q4_2026.body));
    const refused = await call(legacy);
    assert.deepEqual([refused.status, refused.body.code], [404, 'no_such_mandate']);
    await hosted.http.get(`/v0/mandates/${legacy}`).set(bearer(alice.human)).expect(404);

    const underQ4 = await listed(`${alice.handle}/q4`);
    assert.deepEqual(underQ4.map((receipt) => receipt.id), [q4.body.receipt.id]);
    assert.equal(underQ4[0].mandate, `${alice.handle}/q4`);
    assert.deepEqual(underQ4[0].calls.map((child) => child.mandate), [`${alice.handle}/q4.${q4.body.receipt.id}`]);
    assert.deepEqual((await listed(`${alice.handle}/q4-2026`)).map((receipt) => receipt.id), [q4_2026.body.receipt.id]);
    const mandates = await hosted.http.get('/v0/mandates').set(bearer(alice.human)).expect(200);
    assert.deepEqual(mandates.body.mandates.map((row: { mandate: { id: string } }) => row.mandate.id), [`${alice.handle}/sandbox`, `${alice.handle}/q4`, `${alice.handle}/q4-2026`]);
  });
});
