/**
 * Money is conserved through random call trees (gateway §2 "Split", §3, §7 "The journal").
 * `gto/tree` runs a plan drawn by fast-check: which agents it calls (per_unit, per_run under
 * charge_on attempt, quote, free, a quoting sub-orchestrator `gto/branch`, an `included`
 * orchestrator `gtinc/incl`, whose own calls the tree allows), with random units, quotes and outcomes (success, billed declared
 * error, crash, timeout), one after the other or in parallel, sometimes under a `max_cost`. Once
 * the outbox has posted:
 *   - the payer's balance moved by exactly minus the root receipt's `cost.total`, which is also
 *     what the mandate's budget shows spent;
 *   - every receipt's splits sum to its `cost.own`, `billed` exactly when that is above 0, and its
 *     `cost.downstream` is the sum of the totals of the children its payer paid;
 *   - the sum over every clearing account (`platform:fees` and `external:*` included) is zero,
 *     and no hold is left open.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { flatten, micros, splitsTotal, useTestGateway } from '../helpers/gateway.ts';
import { setUp } from '../helpers/hooks.ts';

const gw = useTestGateway();
setUp(async () => {
  // gtinc/incl pays its own downstream calls.
  await gw.fund('gtinc', 50_000_000);
});

/** Leaf outcomes; `hang` (a 1 s timeout) is drawn rarely to keep the runs short. */
const leafOutcome = fc.constantFrom('ok', 'ok', 'ok', 'ok', 'billed_error', 'crash', 'ok', 'billed_error', 'ok', 'crash', 'billed_error', 'hang');
const quote = fc.oneof(
  fc.integer({ min: 0, max: 600_000 }).map((n) => (n / 1_000_000).toFixed(6)),
  fc.constantFrom('0.0000011', '0', '0.05', '0.5000001'),
);

const unit = fc.record({ agent: fc.constant('gt/unit'), input: fc.record({ do: leafOutcome, units: fc.integer({ min: 0, max: 8 }) }) });
const attempt = fc.record({ agent: fc.constant('gt/attempt'), input: fc.record({ do: leafOutcome }) });
const quoted = fc.record({ agent: fc.constant('gt/quote'), input: fc.record({ do: fc.constantFrom('ok', 'crash'), quote }) });
const free = fc.record({ agent: fc.constant('gt/free'), input: fc.record({ do: leafOutcome }) });
const leaf = fc.oneof(unit, attempt, quoted, free);

/** gto/branch declares gt/unit, gt/attempt and gt/free; gt/quote is drawn now and then to be refused. */
const branch = fc.record({
  agent: fc.constant('gto/branch'),
  input: fc.record({
    do: fc.constantFrom('ok', 'ok', 'crash'),
    quote,
    calls: fc.array(fc.oneof(unit, attempt, free, unit, attempt, free, quoted), { maxLength: 3 }),
    parallel: fc.boolean(),
  }),
});

const included = fc.record({
  agent: fc.constant('gtinc/incl'),
  input: fc.record({
    do: fc.constantFrom('ok', 'billed_error', 'crash'),
    calls: fc.array(fc.record({ agent: fc.constant('gt/run'), input: fc.record({ do: fc.constantFrom('ok', 'crash') }) }), { maxLength: 2 }),
  }),
});

const plan = fc.record({
  input: fc.record({
    do: fc.constantFrom('ok', 'ok', 'billed_error', 'crash'),
    calls: fc.array(fc.oneof(leaf, leaf, branch, included), { maxLength: 4 }),
    parallel: fc.boolean(),
  }),
  max_cost: fc.option(fc.constantFrom('0.30', '0.80', '1.20'), { nil: undefined }),
});

test('random call trees: the payer pays the root total, splits sum to own costs, all accounts sum to zero', async () => {
  await fc.assert(
    fc.asyncProperty(plan, async ({ input, max_cost }) => {
      const mandate = await gw.mandate();
      const before = await gw.balances([mandate.payer]);
      const response = await gw.call({ mandate: mandate.id, agent: 'gto/tree', input, ...(max_cost ? { max_cost } : {}) });
      assert.ok([200, 502].includes(response.status), `status ${response.status}: ${JSON.stringify(response.body)}`);
      const tree = await gw.receipt(response.body.receipt.id);
      const after = await gw.balances([mandate.payer]);

      assert.equal(after[mandate.payer] - before[mandate.payer], 0 - micros(tree.cost.total), 'the payer paid the root total');
      if (max_cost) assert.ok(micros(tree.cost.total) <= micros(max_cost), 'the root total stays within max_cost');
      const budget = (await gw.http.get(`/v0/mandates/${mandate.id}`).expect(200)).body.budget;
      assert.equal(budget.spent, tree.cost.total);
      assert.equal(budget.reserved, '0.00');

      for (const receipt of flatten(tree)) {
        const own = micros(receipt.cost.own);
        assert.equal(splitsTotal(receipt), own, `${receipt.id}: splits sum to cost.own`);
        assert.equal(receipt.billed, own > 0, `${receipt.id}: billed exactly when money moved`);
        assert.equal(micros(receipt.cost.total), own + micros(receipt.cost.downstream), `${receipt.id}: total = own + downstream`);
        const paid = receipt.calls.filter((child) => child.payer === receipt.payer).reduce((sum, child) => sum + micros(child.cost.total), 0);
        assert.equal(micros(receipt.cost.downstream), paid, `${receipt.id}: downstream = the children its payer paid`);
        assert.notEqual(receipt.status, 'running');
      }

      let sum = 0;
      for (const account of await gw.allAccounts()) sum += await gw.balance(account);
      assert.equal(sum, 0, 'the sum over every clearing account is zero');
      assert.equal(await gw.reserved(mandate.payer), 0);
      assert.equal(await gw.reserved('gtinc'), 0);
    }),
    { numRuns: 15 },
  );
});
