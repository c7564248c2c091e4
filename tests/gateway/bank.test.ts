/**
 * The bank test (issue 8 §7): the gateway under concurrent mixed callers (per_run, a fork paying a
 * royalty, per_unit, quote, delegating, by capability, a slow agent, and calls through `/mcp`),
 * with `kill -9` of the gateway process and, separately, of the binding process (`holon clearing
 * serve`, the gateway pointed at it with `clearing_url`) at seeded random moments, each restarted,
 * for several rounds. After the drain the books must hold to the micro-unit (`checkBooks`).
 *
 * `HOLON_BANK_SEED` replays a run (the seed is printed), `HOLON_BANK_ROUNDS` (default 4) and
 * `HOLON_BANK_CALLERS` (default 50) size it: about two minutes per engine on an idle 2-core machine
 * (a restart on PGlite waits up to 20 s for the killed process's stale directory lock).
 */
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { freshStore } from '../helpers/gateway.ts';
import type { GatewayChild } from '../helpers/gateway-child.ts';
import { bankMandates, bankSettings, checkBooks, drained, fundDev, openBooks, seeded, startBankGateway, startBinding, startLoad } from '../helpers/bank.ts';

test('bank: mixed callers, kill -9 of the gateway and of the binding at random moments, restarts; the books balance to the micro-unit', { timeout: 600_000 }, async () => {
  const { seed, rounds, callers } = bankSettings();
  console.log(`bank: HOLON_BANK_SEED=${seed} HOLON_BANK_ROUNDS=${rounds} HOLON_BANK_CALLERS=${callers}`);
  const random = seeded(seed);
  const started_ms = Date.now();
  const mark = (what: string) => console.log(`bank: ${((Date.now() - started_ms) / 1000).toFixed(1)} s ${what}`);
  const store = await freshStore();
  const mandate_dir = await bankMandates(store);
  const binding = await startBinding(store);
  let gateway: GatewayChild | null = await startBankGateway(store, binding, mandate_dir);
  const port = Number(new URL(gateway.url).port);
  await fundDev(binding, store);
  mark('started');
  const load = startLoad(() => (gateway ? [gateway.url] : []), callers, random);
  const kills = { gateway: 0, binding: 0 };
  try {
    for (let round = 0; round < rounds; round++) {
      await sleep(1_000 + random() * 3_000);
      // Alternating, so both kinds happen in any run of two rounds or more; the seed picks which first.
      if ((round + seed) % 2 === 0) {
        const killed: GatewayChild = gateway!;
        gateway = null;
        await killed.kill();
        kills.gateway++;
        await sleep(random() * 500);
        gateway = await startBankGateway(store, binding, mandate_dir, port);
        mark('gateway restarted');
      } else {
        await binding.kill();
        kills.binding++;
        await sleep(random() * 500);
        await binding.restart();
        mark('binding restarted');
      }
    }
    await sleep(1_000);
  } finally {
    await load.stop();
  }
  mark('load stopped');
  await drained(gateway!.url, binding);
  mark('drained');
  await gateway!.stop();
  await binding.stop();
  const books = await openBooks(store);
  try {
    const figures = await checkBooks(books.gateway.knex, books.clearing.knex, load.tally);
    console.log(`bank: seed ${seed}, kills ${JSON.stringify(kills)}, sent ${load.tally.sent}, answers ${JSON.stringify(load.tally.by_status)}, books ${JSON.stringify(figures)}`);
    assert.ok(load.tally.succeeded.size > 0, 'calls succeeded between the kills');
  } finally {
    await books.close();
    await rm(store.db, { recursive: true, force: true });
  }
});
