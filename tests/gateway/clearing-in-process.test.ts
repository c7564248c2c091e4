/**
 * The clearing seam in the binding's own process (issue 12 §2, `clearing-in-process.ts`) answers
 * like the same binding over HTTP: the same result for a success and a replay, the same
 * `ClearingRefused` (status, §7 code, sentence) for a refusal, whether the binding's rule or the
 * contract's schema refused it; and `ClearingUnreachable` when the ledger cannot be reached.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createClearingApp, openLedger } from '../../src/clearing/app.ts';
import type { Ledger } from '../../src/clearing/ledger.ts';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { ClearingRefused, ClearingUnreachable, HttpClearingPort, type ClearingPort } from '../../src/gateway/clearing.ts';
import { InProcessClearingPort } from '../../src/gateway/clearing-in-process.ts';
import { openTestDatabase, unique } from '../helpers/clearing.ts';

let db: Database;
let ledger: Ledger;
let server: Server;
let http: HttpClearingPort;
let local: InProcessClearingPort;

before(async () => {
  db = await openTestDatabase();
  ledger = openLedger(db.knex);
  server = createClearingApp({ db: db.knex, ledger }).listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  http = new HttpClearingPort(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  local = new InProcessClearingPort(ledger);
});

after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await db.close();
});

/** What a port call ended with, comparable across the two ports. */
type Answer = { result: unknown } | { refused: { status: number; code: string; message: string } } | { unreachable: string };

async function answerOf(call: (port: ClearingPort) => Promise<unknown>, port: ClearingPort): Promise<Answer> {
  try {
    return { result: await call(port) };
  } catch (error) {
    if (error instanceof ClearingRefused) return { refused: { status: error.status, code: error.code, message: error.message } };
    if (error instanceof ClearingUnreachable) return { unreachable: error.message };
    throw error;
  }
}

/** Runs `call` on the HTTP port then the in-process one; asserts they answer alike and returns the answer. */
async function alike(call: (port: ClearingPort) => Promise<unknown>): Promise<Answer> {
  const overHttp = await answerOf(call, http);
  const inProcess = await answerOf(call, local);
  assert.deepEqual(inProcess, overHttp);
  return overHttp;
}

test('open-hold beyond what is available: both ports refuse 422 insufficient_funds with the same sentence', async () => {
  const payer = unique('payer');
  await local.createAccount(payer);
  await local.credit(unique('fund'), payer, 1_000, 'test funding', true);
  const holdId = unique('hold');
  assert.deepEqual(await alike((port) => port.openHold(holdId, payer, 5_000, new Date(Date.now() + 60_000), 'r1')), {
    refused: { status: 422, code: 'insufficient_funds', message: `the clearing binding refused open-hold ${holdId}: a hold of 5000 does not fit: 1000 available on ${payer} (balance 1000, reserved 0)` },
  });
});

test('a settle, then its replay on either port: applied once, the replay answers applied false on both', async () => {
  const caller = unique('caller');
  const owner = unique('owner');
  await http.createAccount(caller);
  await local.createAccount(owner);
  const body = { txnId: unique('settle'), caller, owner, retail: 1_000, rate: 900, ref: 'r2' };
  assert.deepEqual(await local.settle(body), { ok: true, applied: true, state: 'settled' });
  assert.deepEqual(await alike((port) => port.settle(body)), { result: { ok: true, applied: false, state: 'settled' } });
  const balance = await alike((port) => port.readBalance(caller));
  assert.deepEqual(balance, { result: { account: caller, balance: -1_000, available: -1_000, reserved: 0, pending: 0 } });
});

test('the same transaction id with other terms: both refuse 422 terms_conflict', async () => {
  const caller = unique('caller');
  const owner = unique('owner');
  await local.createAccount(caller);
  await local.createAccount(owner);
  const body = { txnId: unique('settle'), caller, owner, retail: 1_000, rate: 900 };
  await http.settle(body);
  const answer = await alike((port) => port.settle({ ...body, retail: 2_000 }));
  assert.equal((answer as { refused: { code: string } }).refused.code, 'terms_conflict');
  assert.equal((answer as { refused: { status: number } }).refused.status, 422);
});

test('a request the contract schema refuses (amount 0) and an unknown hold: the same 422 and 404 on both', async () => {
  const payer = unique('payer');
  await local.createAccount(payer);
  const holdId = unique('hold');
  assert.deepEqual(await alike((port) => port.openHold(holdId, payer, 0, new Date(Date.now() + 60_000), 'r3')), {
    refused: { status: 422, code: 'invalid_request', message: `the clearing binding refused open-hold ${holdId}: invalid request: body.amount must be >= 1` },
  });
  assert.deepEqual(await alike((port) => port.releaseHold(holdId, 'call settled')), {
    refused: { status: 404, code: 'no_such_object', message: `the clearing binding refused release-hold ${holdId}: there is no reservation ${holdId}` },
  });
});

test('a ledger whose database is gone: the in-process port answers ClearingUnreachable, never a refusal', async () => {
  const gone = await openDatabase({ memory: true });
  const port = new InProcessClearingPort(openLedger(gone.knex));
  await gone.close();
  const answer = await answerOf((p) => p.openHold(unique('hold'), unique('payer'), 10, new Date(Date.now() + 60_000), 'r4'), port);
  assert.ok('unreachable' in answer, JSON.stringify(answer));
  assert.match(answer.unreachable, /^the clearing binding failed on open-hold hold-/);
});
