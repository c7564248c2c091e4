/**
 * `holon audit` and the journal's hash chain (issue 23 §3), on the engine of the run: a binding
 * with credits, settles, a reversal, a hold and a draw, and one receipt settled under the
 * gateway's identity, passes; each tampering that a superuser could do with every trigger off
 * (`session_replication_role = replica`) is found, naming the entry (or the account): a line's
 * amount changed, two lines changed so the entry still sums to zero, an entry deleted, two entries
 * swapped in the chain, an entry appended without its hash, a receipt's cost edited, a balance
 * edited, an entry's terms or their text (`terms_text`) edited, and a checkpoint from another
 * journal. Each tampering is undone before the next test.
 * Checkpoints are signed by the gateway's signer (`src/signing/`, keys stored sealed in the
 * database): a kept one still passes after more entries and after the key is rotated; one signed
 * by a key the JWKS does not list, or edited, is refused with the reason.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import canonicalize from 'canonicalize';
import type { Knex } from 'knex';
import { audit } from '../../src/backup/audit.ts';
import { entryLeaf } from '../../src/backup/chain.ts';
import { runAudit } from '../../src/backup/audit-command.ts';
import { backup, storesOf } from '../../src/backup/backup.ts';
import { verifyCheckpoint } from '../../clients/src/verify.ts';
import { createClearingApp } from '../../src/clearing/app.ts';
import { opsText } from '../../src/clearing/ledger-op.ts';
import { rotateKey } from '../../src/signing/keys.ts';
import { openSigner } from '../../src/signing/signer.ts';
import type { ChainPoint } from '../../src/signing/checkpoint.ts';
import supertest from 'supertest';
import { openFreshDatabase, unique, inOneHour } from '../helpers/clearing.ts';
import { setUp, useOpened } from '../helpers/hooks.ts';

const FILE_SECRET = 'audit-test-file-secret-0123456789abcdef';
const ISSUER = 'https://holon.example';

/** A binding app over `knex` whose checkpoints are signed by the key stored in that database (as a restarted process would load it). */
async function bindingApp(knex: Knex) {
  return supertest(createClearingApp({ db: knex, signer: await openSigner(knex, { file_secret: FILE_SECRET, issuer: ISSUER }) }).callback());
}

/** A fresh database with a binding app over it. */
async function openJournal() {
  const fresh = await openFreshDatabase();
  return { knex: fresh.db.knex, http: await bindingApp(fresh.db.knex), dispose: fresh.dispose };
}

const journal = useOpened('the audited journal', openJournal, (j) => j.dispose());
const other = useOpened('another journal', openJournal, (j) => j.dispose());

/** The ids the tests tamper with. */
const ids = { caller: '', owner: '', settle: '', receiptSettle: '', receipt: 'r1', credit: '', group: [] as string[] };

setUp(async () => {
  const { http, knex } = journal;
  ids.caller = unique('caller');
  ids.owner = unique('owner');
  for (const account of [ids.caller, ids.owner]) await http.post('/internal/reference/accounts').send({ account }).expect(200);
  ids.credit = unique('fund');
  await http.post('/internal/ledger/purchase').send({ txnId: ids.credit, account: ids.caller, amount: 5_000_000 }).expect(200);
  ids.settle = unique('work');
  await http.post('/internal/ledger/charge').send({ txnId: ids.settle, caller: ids.caller, owner: ids.owner, rate: 250_000, retail: 300_000, ref: 'a call', memo: 'naïve "quoted" memo\n' }).expect(200);
  const reversed = unique('work');
  await http.post('/internal/ledger/charge').send({ txnId: reversed, caller: ids.caller, owner: ids.owner, rate: 90, retail: 100 }).expect(200);
  await http.post('/internal/ledger/reverse').send({ txnId: unique('undo'), reverses: reversed, reason: 'refund' }).expect(200);
  const holdId = unique('hold');
  await http.post('/internal/ledger/hold').send({ holdId, account: ids.caller, amount: 700_000, expiresAt: inOneHour() }).expect(200);
  const drawee = unique('drawee');
  await http.post('/internal/reference/accounts').send({ account: drawee }).expect(200);
  await http.post('/internal/ledger/draw').send({ holdId, txnId: unique('win'), caller: ids.caller, owner: drawee, lines: [{ meter: 'tokens', amount: 600 }, { meter: 'images', amount: 1 }] }).expect(200);
  // Three credits in one transaction, as the write path's group commit sends them: one link of three entries.
  ids.group = [unique('group'), unique('group'), unique('group')];
  const credit = (txn_id: string) => ({ op: 'post' as const, lock: [ids.owner], txn_id, door: 'credit', account: ids.owner, amount: 10, terms: { account: ids.owner, amount: 10, simulated: false },
    postings: [{ account: 'external:funding', delta: -10, kind: 'funding' }, { account: ids.owner, delta: 10, kind: 'credit' }] });
  const [{ outcomes }] = (await knex.raw('SELECT clearing_apply(?::jsonb) AS outcomes', [opsText(ids.group.map(credit))])).rows;
  assert.deepEqual(outcomes, [{ applied: true }, { applied: true }, { applied: true }]);
  // The receipt a gateway wrote for a billed call, settled under its identity (gateway §4, contract §13).
  const gateway = (await knex('gateway_identity').first('id')).id as string;
  ids.receiptSettle = `settle:${gateway}:${ids.receipt}`;
  await knex('gateway_receipts').insert({ id: ids.receipt, root_mandate: 'm', status: 'succeeded', document: JSON.stringify({ id: ids.receipt, billed: true, cost: { own: '0.4', downstream: '0', total: '0.4' } }) });
  await http.post('/internal/ledger/charge').send({ txnId: ids.receiptSettle, caller: ids.caller, owner: ids.owner, rate: 360_000, retail: 400_000, ref: ids.receipt }).expect(200);
  await other.http.post('/internal/reference/accounts').send({ account: 'elsewhere' }).expect(200);
  await other.http.post('/internal/ledger/purchase').send({ txnId: 'fund-elsewhere', account: 'elsewhere', amount: 1 }).expect(200);
});

const source = () => ({ clearing: journal.knex, gateway: journal.knex });

/** Runs `statements` as a superuser with every trigger and foreign key off, in one transaction. */
async function tamper(knex: Knex, statements: Array<[string, Knex.RawBinding[]?]>): Promise<void> {
  await knex.transaction(async (trx) => {
    await trx.raw('SET LOCAL session_replication_role = replica');
    for (const [sql, values] of statements) await trx.raw(sql, values ?? []);
  });
}

/** The audit's failure after `statements`, which `undo` then reverses; the audit passes again after. */
async function failureAfter(statements: Array<[string, Knex.RawBinding[]?]>, undo: Array<[string, Knex.RawBinding[]?]>, checkpoint: ChainPoint | null = null) {
  await tamper(journal.knex, statements);
  try {
    return (await audit(source(), checkpoint)).failure;
  } finally {
    await tamper(journal.knex, undo);
    assert.equal((await audit(source())).failure, null, 'the books pass again once the tampering is undone');
  }
}

/** An entry's position in the chain: its batch link's position less the entries after it in that link. */
const positionOf = async (txn_id: string) =>
  Number((await journal.knex.raw('SELECT position - cardinality(entries) + array_position(entries, ?) AS position FROM clearing_journal_batches WHERE entries @> ARRAY[?]', [txn_id, txn_id])).rows[0].position);

/** The batch links in order. */
const linksOf = (knex: Knex): Promise<Array<{ position: string; entries: string[]; leaves: string[]; hash: string }>> =>
  knex('clearing_journal_batches').orderBy('position').select('position', 'entries', 'leaves', 'hash');

test('the untouched books pass: every entry chained in commit order, each leaf as the audit recomputes it', async () => {
  const report = await audit(source());
  assert.equal(report.failure, null);
  const links = await linksOf(journal.knex);
  const chained = links.flatMap((link) => link.entries);
  const entries = Number((await journal.knex('clearing_transactions').count({ n: '*' }).first())!.n);
  assert.equal(chained.length, entries);
  assert.equal(new Set(chained).size, entries, 'no entry is chained twice');
  let size = 0;
  for (const link of links) assert.equal(Number(link.position), (size += link.entries.length), 'a link\'s position counts the entries up to its last');
  assert.deepEqual(report.chain, { size: entries, head: links.at(-1)!.hash });
  assert.equal(report.settled_receipts, 1);
  // The first entry's leaf, computed here from what it records: SQL and `canonicalize` agree byte for byte.
  const first = await journal.knex('clearing_transactions').where({ txn_id: chained[0] }).first();
  const postings = await journal.knex('clearing_postings').where({ txn_id: first.txn_id }).orderBy('id').select('account', 'delta', 'kind');
  const entry = { txn_id: first.txn_id, door: first.door, account: first.account, amount: String(first.amount), terms: first.terms, reverses: first.reverses, hold_id: first.hold_id, reason: first.reason, actor: first.actor, ref: first.ref, memo: first.memo, simulated: first.simulated, postings: postings.map((p) => ({ ...p, delta: String(p.delta) })) };
  assert.equal(entryLeaf(entry), links[0].leaves[0]);
  // The binding wrote each entry's terms also as their canonical text (migration 027), the text its leaf hashed.
  const settle = await journal.knex('clearing_transactions').where({ txn_id: ids.settle }).first('terms', 'terms_text');
  assert.equal(settle.terms_text, `{"caller":"${ids.caller}","owner":"${ids.owner}","rate":250000,"retail":300000}`);
  assert.deepEqual(settle.terms, { caller: ids.caller, owner: ids.owner, rate: 250_000, retail: 300_000 });
  const untexted = await journal.knex('clearing_transactions').select('txn_id', 'door', 'terms', 'terms_text');
  assert.deepEqual(untexted.filter((e) => e.terms_text !== canonicalize(e.terms)), [], 'every door of the binding (credit, settle, reverse, draw) writes terms_text');
  assert.deepEqual(new Set(untexted.map((e) => e.door)), new Set(['credit', 'settle', 'reverse', 'draw']));
});

test('a line amount changed by SQL: the entry no longer sums to zero, and is named', async () => {
  const failure = await failureAfter(
    [[`UPDATE clearing_postings SET delta = delta + 1 WHERE txn_id = ? AND kind = 'earn'`, [ids.settle]]],
    [[`UPDATE clearing_postings SET delta = delta - 1 WHERE txn_id = ? AND kind = 'earn'`, [ids.settle]]],
  );
  assert.equal(failure?.entry, ids.settle);
  assert.equal(failure?.position, await positionOf(ids.settle));
  assert.match(failure!.reason, /does not sum to zero: its postings sum to 1$/);
});

test('two lines changed so the entry still sums to zero: its hash no longer matches', async () => {
  const failure = await failureAfter(
    [
      [`UPDATE clearing_postings SET delta = delta + 1000 WHERE txn_id = ? AND kind = 'earn'`, [ids.settle]],
      [`UPDATE clearing_postings SET delta = delta - 1000 WHERE txn_id = ? AND kind = 'fee'`, [ids.settle]],
    ],
    [
      [`UPDATE clearing_postings SET delta = delta - 1000 WHERE txn_id = ? AND kind = 'earn'`, [ids.settle]],
      [`UPDATE clearing_postings SET delta = delta + 1000 WHERE txn_id = ? AND kind = 'fee'`, [ids.settle]],
    ],
  );
  assert.equal(failure?.entry, ids.settle);
  assert.match(failure!.reason, /does not match its hash/);
});

test("an entry's terms or their text edited by SQL, the other left: the entry is named, with both texts", async () => {
  const position = await positionOf(ids.settle);
  const text = `{"caller":"${ids.caller}","owner":"${ids.owner}","rate":250000,"retail":300000}`;
  const edited = `{"caller":"${ids.caller}","owner":"${ids.owner}","rate":1,"retail":300000}`;
  const terms = await failureAfter(
    [[`UPDATE clearing_transactions SET terms = jsonb_set(terms, '{rate}', '1') WHERE txn_id = ?`, [ids.settle]]],
    [[`UPDATE clearing_transactions SET terms = jsonb_set(terms, '{rate}', '250000') WHERE txn_id = ?`, [ids.settle]]],
  );
  assert.deepEqual(terms, { entry: ids.settle, position, reason: `entry ${ids.settle} at position ${position} has terms_text ${text}, which is not the canonical JSON of its terms, ${edited}` });
  const termsText = await failureAfter(
    [[`UPDATE clearing_transactions SET terms_text = ? WHERE txn_id = ?`, [edited, ids.settle]]],
    [[`UPDATE clearing_transactions SET terms_text = ? WHERE txn_id = ?`, [text, ids.settle]]],
  );
  assert.deepEqual(termsText, { entry: ids.settle, position, reason: `entry ${ids.settle} at position ${position} has terms_text ${edited}, which is not the canonical JSON of its terms, ${text}` });
});

test('an entry deleted with its postings: named as missing from the journal', async () => {
  const entry = await journal.knex('clearing_transactions').where({ txn_id: ids.settle }).first();
  const postings = await journal.knex('clearing_postings').where({ txn_id: ids.settle }).orderBy('id');
  const failure = await failureAfter(
    [
      ['DELETE FROM clearing_postings WHERE txn_id = ?', [ids.settle]],
      ['DELETE FROM clearing_transactions WHERE txn_id = ?', [ids.settle]],
    ],
    [
      [journal.knex('clearing_transactions').insert({ ...entry, terms: JSON.stringify(entry.terms) }).toString()],
      ...postings.map((p): [string] => [journal.knex('clearing_postings').insert(p).toString()]),
    ],
  );
  assert.equal(failure?.entry, ids.settle);
  assert.match(failure!.reason, /is missing from the journal/);
});

test('two entries swapped in the chain: the first of them no longer matches its hash', async () => {
  const a = await positionOf(ids.credit);
  const b = await positionOf(ids.settle);
  const rename = (from: string, to: string): [string, Knex.RawBinding[]] => ['UPDATE clearing_journal_batches SET entries = array_replace(entries, ?, ?) WHERE entries @> ARRAY[?]', [from, to, from]];
  const swap = [rename(ids.credit, 'swapping'), rename(ids.settle, ids.credit), rename('swapping', ids.settle)];
  const back = [rename(ids.settle, 'swapping'), rename(ids.credit, ids.settle), rename('swapping', ids.credit)];
  assert.ok(a < b);
  const failure = await failureAfter(swap, back);
  assert.equal(failure?.entry, ids.settle);
  assert.equal(failure?.position, a);
  assert.match(failure!.reason, /does not match its hash/);
});

test('an entry inside a link of several, edited: named with its position, the link\'s other entries untouched', async () => {
  const [, middle] = ids.group;
  const failure = await failureAfter(
    [[`UPDATE clearing_transactions SET memo = 'rewritten' WHERE txn_id = ?`, [middle]]],
    [[`UPDATE clearing_transactions SET memo = NULL WHERE txn_id = ?`, [middle]]],
  );
  assert.equal(failure?.entry, middle);
  assert.equal(failure?.position, await positionOf(middle));
  assert.equal(await positionOf(middle), (await positionOf(ids.group[0])) + 1);
  assert.match(failure!.reason, new RegExp(`^entry ${middle} at position \\d+ does not match its hash: its link holds [0-9a-f]{64}, its contents give [0-9a-f]{64}$`));
});

test("a link's root rewritten to match edited leaves: the link is named by its positions", async () => {
  const [first, , last] = ids.group;
  const [from, to] = [await positionOf(first), await positionOf(last)];
  const root = (await journal.knex('clearing_journal_batches').where({ position: to }).first('root')).root as string;
  const forged = 'f'.repeat(64);
  const failure = await failureAfter(
    [['UPDATE clearing_journal_batches SET root = ? WHERE position = ?', [forged, to]]],
    [['UPDATE clearing_journal_batches SET root = ? WHERE position = ?', [root, to]]],
  );
  assert.equal(failure?.entry, last);
  assert.equal(failure?.position, to);
  assert.match(failure!.reason, new RegExp(`^the link of positions ${from} to ${to} does not match its hash: it holds root ${forged} and hash [0-9a-f]{64}, its entries and the link before give ${root} and [0-9a-f]{64}$`));
});

test('a link deleted: the chain jumps, naming how many entries are gone', async () => {
  const to = await positionOf(ids.group[2]);
  const link = await journal.knex('clearing_journal_batches').where({ position: to }).first();
  const failure = await failureAfter(
    [['DELETE FROM clearing_journal_batches WHERE position = ?', [to]]],
    [[journal.knex('clearing_journal_batches').insert(link).toString()]],
  );
  assert.match(failure!.reason, new RegExp(`^the chain jumps from position ${to - 3} to ${to + 1}: 3 chained entries are gone$`));
});

test('an entry appended without its hash: named as not in the chain', async () => {
  const forged = unique('forged');
  const failure = await failureAfter(
    [
      [`INSERT INTO clearing_transactions (txn_id, door, account, amount, terms) VALUES (?, 'credit', ?, 1000000, '{}')`, [forged, ids.owner]],
      [`INSERT INTO clearing_postings (txn_id, account, delta, kind) VALUES (?, 'external:funding', -1000000, 'funding'), (?, ?, 1000000, 'credit')`, [forged, forged, ids.owner]],
    ],
    [
      ['DELETE FROM clearing_postings WHERE txn_id = ?', [forged]],
      ['DELETE FROM clearing_transactions WHERE txn_id = ?', [forged]],
    ],
  );
  assert.deepEqual(failure, { entry: forged, position: null, reason: `entry ${forged} is in the journal but not in the chain: it was written without its hash` });
});

test("a receipt's cost edited: its settlement is named with both figures", async () => {
  const failure = await failureAfter(
    [[`UPDATE gateway_receipts SET document = jsonb_set(document, '{cost,own}', '"0.5"') WHERE id = ?`, [ids.receipt]]],
    [[`UPDATE gateway_receipts SET document = jsonb_set(document, '{cost,own}', '"0.4"') WHERE id = ?`, [ids.receipt]]],
  );
  assert.deepEqual(failure, { entry: ids.receiptSettle, position: null, reason: `entry ${ids.receiptSettle} settles 400000 micro-units, but receipt ${ids.receipt} says its own cost is 0.5 (500000 micro-units)` });
});

test('a balance edited: the account is named with its balance and the sum of its postings', async () => {
  const failure = await failureAfter([['UPDATE clearing_accounts SET balance = balance + 7 WHERE id = ?', [ids.owner]]], [['UPDATE clearing_accounts SET balance = balance - 7 WHERE id = ?', [ids.owner]]]);
  assert.deepEqual(failure, { entry: null, position: null, reason: `account ${ids.owner} has balance 610037, but its postings sum to 610030` });
});

/** The JWKS a binding serves at `/.well-known/jwks.json`. */
const jwksOf = async (http: typeof journal.http) => (await http.get('/.well-known/jwks.json').expect(200)).body;

test('checkpoints: signed by the stored key the JWKS lists; a kept one passes after more entries; one from another journal fails at its size', async () => {
  const jwks = await jwksOf(journal.http);
  const kept = await verifyCheckpoint((await journal.http.get('/internal/ledger/checkpoint').expect(200)).body.jws, jwks);
  assert.equal(kept.iss, ISSUER);
  await journal.http.post('/internal/ledger/purchase').send({ txnId: unique('fund'), account: ids.owner, amount: 1 }).expect(200);
  const report = await audit(source(), kept);
  assert.equal(report.failure, null);
  assert.equal(report.chain.size, kept.size + 1);

  const foreign = await verifyCheckpoint((await other.http.get('/internal/ledger/checkpoint').expect(200)).body.jws, await jwksOf(other.http));
  assert.equal(foreign.size, 1);
  const [first] = await linksOf(journal.knex);
  assert.deepEqual(first.entries.length, 1, 'each request of this journal committed alone');
  assert.deepEqual((await audit(source(), foreign)).failure, {
    entry: first.entries[0],
    position: 1,
    reason: `the checkpoint is not a prefix of this journal: at its size 1, the link ending with entry ${first.entries[0]} hashes to ${first.hash}, the checkpoint's head is ${foreign.head}`,
  });
});

test('holon audit refuses a checkpoint signed by a key the JWKS does not list, or edited, with the reason', async () => {
  const scratch = await mkdtemp(path.join(tmpdir(), 'holon-audit-refused-'));
  try {
    const jwks = path.join(scratch, 'jwks.json');
    await writeFile(jwks, JSON.stringify(await jwksOf(journal.http)));
    const kid = (await jwksOf(journal.http)).keys.map((key: { kid: string }) => key.kid).join(', ');
    // The checkpoint is checked before the books are opened: a refused one reads no backup (this one is never written).
    const unread = path.join(scratch, 'unread.jsonl');
    const auditWith = async (body: unknown) => {
      const checkpoint = path.join(scratch, 'checkpoint.json');
      await writeFile(checkpoint, JSON.stringify(body));
      return runAudit({ in: unread, db: scratch, checkpoint, jwks });
    };
    // Another journal's binding signs with its own stored key, which this JWKS does not list.
    const stranger = (await other.http.get('/internal/ledger/checkpoint').expect(200)).body;
    const strangerKid = JSON.parse(Buffer.from(stranger.jws.split('.')[0], 'base64url').toString()).kid;
    assert.deepEqual(await auditWith(stranger), {
      ok: false,
      report: null,
      line: `audit refused: the checkpoint was signed with key ${strangerKid}, which the JWKS does not list (it lists ${kid}): fetch the issuer's current /.well-known/jwks.json, or the document did not come from that gateway`,
    });
    // Its size changed in the signed payload, the signature kept.
    const checkpoint = (await journal.http.get('/internal/ledger/checkpoint').expect(200)).body;
    const [header, payload, signature] = checkpoint.jws.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const edited = `${header}.${Buffer.from(JSON.stringify({ ...claims, size: claims.size - 1 })).toString('base64url')}.${signature}`;
    assert.deepEqual(await auditWith({ ...checkpoint, size: claims.size - 1, jws: edited }), {
      ok: false,
      report: null,
      line: `audit refused: the checkpoint: the signature of key ${kid} does not match the signed text: it was changed after signing`,
    });
    // Unedited, it passes the signature check and reaches the (missing) backup.
    const unedited = await auditWith(checkpoint);
    assert.equal(unedited.ok, false);
    assert.match(unedited.line, /^audit refused: [^\n]*unread\.jsonl/);
    assert.doesNotMatch(unedited.line, /checkpoint/);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
});

test('after the signing key is rotated, a checkpoint kept before still verifies (its key still listed) and passes; new ones carry the new key', async () => {
  const before = (await journal.http.get('/internal/ledger/checkpoint').expect(200)).body;
  const { retired, active } = await rotateKey(journal.knex, FILE_SECRET, 30);
  const restarted = await bindingApp(journal.knex);
  const jwks = await jwksOf(restarted);
  assert.deepEqual(jwks.keys.map((key: { kid: string }) => key.kid), [retired, active]);
  const kept = await verifyCheckpoint(before.jws, jwks);
  assert.equal((await audit(source(), kept)).failure, null);
  const after = (await restarted.get('/internal/ledger/checkpoint').expect(200)).body;
  assert.equal(JSON.parse(Buffer.from(after.jws.split('.')[0], 'base64url').toString()).kid, active);
  assert.equal((await verifyCheckpoint(after.jws, jwks)).size, after.size);
});

test('holon audit on a backup: passes, and after one SQL edit fails naming the entry; --checkpoint needs --jwks', async () => {
  const scratch = await mkdtemp(path.join(tmpdir(), 'holon-audit-test-'));
  try {
    const jwks = path.join(scratch, 'jwks.json');
    const checkpoint = path.join(scratch, 'checkpoint.json');
    await writeFile(jwks, JSON.stringify(await jwksOf(journal.http)));
    await writeFile(checkpoint, JSON.stringify((await journal.http.get('/internal/ledger/checkpoint').expect(200)).body));
    const clean = path.join(scratch, 'clean.jsonl');
    await backup(storesOf(journal.knex, null), clean);
    const passed = await runAudit({ in: clean, db: scratch, checkpoint, jwks });
    assert.equal(passed.ok, true, passed.line);
    assert.match(passed.line, /^audit passed: \d+ entries chained \(head [0-9a-f]{64}\), \d+ accounts equal to their postings, 1 billed receipts settled exactly once$/);
    assert.deepEqual(await runAudit({ in: clean, db: scratch, checkpoint }), { ok: false, report: null, line: 'audit refused: --checkpoint needs --jwks: a checkpoint counts only once its signature is checked' });

    const edited = path.join(scratch, 'edited.jsonl');
    await tamper(journal.knex, [[`UPDATE clearing_transactions SET memo = 'edited' WHERE txn_id = ?`, [ids.settle]]]);
    try {
      await backup(storesOf(journal.knex, null), edited);
    } finally {
      await tamper(journal.knex, [[`UPDATE clearing_transactions SET memo = ? WHERE txn_id = ?`, ['naïve "quoted" memo\n', ids.settle]]]);
    }
    const failed = await runAudit({ in: edited, db: scratch });
    assert.equal(failed.ok, false);
    assert.match(failed.line, new RegExp(`^audit failed at entry ${ids.settle} \\(position ${await positionOf(ids.settle)}\\): entry ${ids.settle} at position \\d+ does not match its hash`));
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
});
