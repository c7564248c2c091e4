/**
 * `holon audit` on a hosted gateway that served traffic (issue 23 "Done when"): sign-ups, a paid
 * call, a delegating call, an approval, an unbilled failure and an admin credit, the settlements
 * posted; its backup passes `holon audit --in`, and after one SQL edit of a settlement's line (by
 * a superuser, triggers off) `holon audit --db` fails naming that entry, exit 1. The admin's
 * `GET /v0/journal/checkpoint`, kept before the last traffic, is signed with the gateway's key (its
 * `/.well-known/jwks.json`), and after `holon rotate-signing-key` still verifies with the JWKS
 * (the retired key stays listed) and is a prefix of the backup's journal.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { verifyCheckpoint } from '../../clients/src/verify.ts';
import { openStores } from '../../src/backup/backup.ts';
import { listedKeys } from '../../src/signing/keys.ts';
import { holon } from '../helpers/cli.ts';
import { ADMIN_KEY, bearer, FILE_SECRET, startTestHosted } from '../helpers/hosted.ts';

test('a hosted gateway with traffic: its backup passes holon audit; one SQL edit of a line fails it naming the entry', async () => {
  const scratch = await mkdtemp(path.join(tmpdir(), 'holon-audit-hosted-'));
  const file = path.join(scratch, 'backup.jsonl');
  const first = await startTestHosted();
  const env = { DATABASE_URL: first.store.database_url };
  try {
    const alice = await first.signup();
    const bob = await first.signup();
    await first.http.post('/v0/calls').set(bearer(alice.agent)).send({ mandate: alice.mandate, agent: 'gt/run', input: { do: 'ok' } }).expect(200);
    await first.http.post('/v0/calls').set(bearer(bob.agent)).send({ mandate: bob.mandate, agent: 'gto/pass', input: { calls: [{ agent: 'gt/run' }], do: 'ok' } }).expect(200);
    await first.http.post('/v0/mandates').set(bearer(alice.human)).send({ id: 'careful', grantee: `${alice.handle}/bot`, allow: { agents: ['*'] }, approval: { above: '0.05' }, budget: { total: '3.00' } }).expect(201);
    const held = await first.http.post('/v0/calls').set(bearer(alice.human)).send({ mandate: `${alice.handle}/careful`, agent: 'gt/run', input: { do: 'ok' } }).expect(202);
    await first.http.post(`/v0/approvals/${held.body.approval.id}`).set(bearer(alice.human)).send({}).expect(200);
    await first.http.post('/v0/calls').set(bearer(bob.human)).send({ mandate: bob.mandate, agent: 'gt/run', input: { do: 'unbilled_error' } }).expect(502);
    await first.running.outbox.drain();
    // Signed with the gateway's key, the one its JWKS lists for mandates and receipts.
    const kept = await first.http.get('/v0/journal/checkpoint').set(bearer(ADMIN_KEY)).expect(200);
    assert.ok(kept.body.size > 0);
    const gatewayKeys = (await first.http.get('/.well-known/jwks.json').expect(200)).body;
    const claims = await verifyCheckpoint(kept.body.jws, gatewayKeys);
    assert.equal(claims.iss, first.settings.public_url ?? first.running.url);
    assert.deepEqual({ size: claims.size, head: claims.head, signed_at: claims.signed_at }, { size: kept.body.size, head: kept.body.head, signed_at: kept.body.signed_at });
    await first.http.get('/v0/journal/checkpoint').set(bearer(alice.human)).expect(403);
    const checkpoint = path.join(scratch, 'checkpoint.json');
    const jwks = path.join(scratch, 'jwks.json');
    await writeFile(checkpoint, JSON.stringify(kept.body));
    await first.http.post('/v0/admin/credit').set(bearer(ADMIN_KEY)).send({ account: bob.handle, amount: '3.00' }).expect(200);
    await first.running.outbox.drain();
    await first.close({ keep: true });

    const backedUp = await holon(['backup', '--out', file, '--db', first.store.db], { env });
    assert.equal(backedUp.code, 0, backedUp.stderr);
    // The key rotated after the checkpoint was kept: the JWKS read now still lists the retired one.
    const rotated = await holon(['rotate-signing-key', '--db', first.store.db], { env: { ...env, HOLON_FILE_SECRET: FILE_SECRET } });
    assert.equal(rotated.code, 0, rotated.stderr);
    const signedWith = JSON.parse(Buffer.from(kept.body.jws.split('.')[0], 'base64url').toString()).kid;
    assert.match(rotated.stdout, new RegExp(`^signing key k-[0-9a-f-]+ is active; ${signedWith} retired, listed for at least 365 days\n$`));
    const afterRotation = await openStores(first.store.db, first.store.database_url);
    try {
      const keys = await listedKeys(afterRotation.stores.find((s) => s.owns('gateway_signing_keys'))!.knex);
      assert.equal(keys.length, 2);
      await writeFile(jwks, JSON.stringify({ keys }));
    } finally {
      await afterRotation.close();
    }
    const passed = await holon(['audit', '--in', file, '--checkpoint', checkpoint, '--jwks', jwks], { env });
    assert.equal(passed.code, 0, passed.stdout + passed.stderr);
    assert.match(passed.stdout, /^audit passed: \d+ entries chained \(head [0-9a-f]{64}\), \d+ accounts equal to their postings, 4 billed receipts settled exactly once\n$/);

    const { stores, close } = await openStores(first.store.db, first.store.database_url);
    let edited: string;
    try {
      const ledger = stores.find((s) => s.owns('clearing_postings'))!.knex;
      edited = (await ledger('clearing_transactions').where('txn_id', 'like', 'settle:%').orderBy('txn_id').first('txn_id')).txn_id;
      await ledger.transaction(async (trx) => {
        await trx.raw('SET LOCAL session_replication_role = replica');
        await trx.raw(`UPDATE clearing_postings SET delta = delta - 1 WHERE txn_id = ? AND kind = 'fee'`, [edited]);
        await trx.raw(`UPDATE clearing_postings SET delta = delta + 1 WHERE txn_id = ? AND kind = 'earn'`, [edited]);
      });
    } finally {
      await close();
    }
    const failed = await holon(['audit', '--db', first.store.db], { env });
    assert.equal(failed.code, 1);
    assert.match(failed.stdout, new RegExp(`^audit failed at entry ${edited.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(position \\d+\\): entry \\S+ at position \\d+ does not match its hash`));
  } finally {
    await rm(first.store.db, { recursive: true, force: true });
    await rm(scratch, { recursive: true, force: true });
  }
});
