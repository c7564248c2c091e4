/**
 * For every check, a fake binding that breaks exactly that rule: the kit must report the check
 * as failed. And every check of the kit has such a case, so none can pass a broken binding unseen.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CHECKS } from '../src/checks/index.ts';
import { runConformance } from '../src/runner.ts';
import { curlFor } from '../src/http.ts';
import { formatFailure } from '../src/report/text.ts';
import { FAKE_FIXTURES, FAULTS, REQUIRED_ONLY, startFakeBinding, type FakeOptions, type Fault } from './fake-binding.ts';

/** [check id, the fault that breaks its rule, how the fake is set up when it matters]. */
const CASES: readonly [string, Fault, Omit<FakeOptions, 'fault'>?][] = [
  ['capabilities.document', 'caps-missing-field'],
  ['capabilities.unit', 'caps-bad-unit'],
  ['capabilities.poll', 'caps-no-poll'],
  ['capabilities.required-operations', 'caps-omits-settle'],
  ['capabilities.operation-names', 'caps-unknown-operation'],
  ['capabilities.credit-needs-funding', 'caps-credit-without-funding'],
  ['capabilities.listed-operations-answer', 'listed-op-not-served'],
  ['capabilities.unlisted-not-offered', 'unlisted-op-no-code', { operations: REQUIRED_ONLY, prefunded: 1000 }],
  ['capabilities.period-shape', 'caps-period-null'],
  ['transport.health', 'no-health'],
  ['transport.health-outside-gate', 'health-gated'],
  ['transport.forwarded-refused', 'no-forwarded-gate'],
  ['transport.percent-encoding', 'path-not-decoded'],
  ['transport.no-such-route', 'unknown-route-not-offered'],
  ['transport.malformed-json', 'bad-json-500'],
  ['resolve.known-agent', 'resolve-wrong-account'],
  ['resolve.unknown-agent-null', 'resolve-unknown-404'],
  ['resolve.cheap', 'resolve-slow'],
  ['balance.shape', 'balance-no-reserved'],
  ['balance.unknown-account', 'unknown-account-not-offered'],
  ['balance.no-reservations', 'available-not-balance', { operations: REQUIRED_ONLY }],
  ['summary.shape', 'summary-no-totals'],
  ['summary.totals-move', 'summary-zero-totals'],
  ['settlement.unknown', 'unknown-settlement-404'],
  ['settle.moves-value', 'settle-charges-rate'],
  ['settle.no-margin-accepted', 'settle-refuses-equal-rate'],
  ['settle.never-refused-for-funds', 'settle-refuses-insufficient'],
  ['settle.refuses-invalid', 'settle-accepts-retail-below-rate'],
  ['settlement.record', 'settlement-amount-is-rate'],
  ['settlement.legs', 'legs-unbalanced'],
  ['credit.moves-value', 'credit-double'],
  ['credit.refuses-invalid', 'credit-accepts-zero'],
  ['adjust.moves-value', 'adjust-ignores-sign'],
  ['adjust.refuses-invalid', 'adjust-accepts-zero'],
  ['reverse.restores', 'reverse-restores-rate'],
  ['reverse.marks-original', 'reverse-no-reversed-by'],
  ['reverse.once', 'reverse-twice'],
  ['reverse.once-names-existing', 'reverse-refusal-unnamed'],
  ['reverse.correction-not-reversible', 'reverse-of-reverse'],
  ['reverse.adjustment-not-reversible', 'reverse-of-adjust'],
  ['reverse.refuses-invalid', 'reverse-without-reason'],
  ['reverse.draw-restores-cap', 'reverse-draw-keeps-cap'],
  ['reverse.released-draw-no-cap', 'reverse-draw-reopens-released'],
  ['reverse.released-draw-record', 'reverse-draw-released-drawn'],
  ['hold.moves-no-value', 'hold-debits-balance'],
  ['hold.record', 'hold-record-wrong-amount'],
  ['hold.insufficient-refused', 'hold-overcommits'],
  ['hold.insufficient-names-figures', 'hold-refusal-vague'],
  ['hold.refuses-invalid', 'hold-accepts-bad-expiry'],
  ['hold.terms-conflict-names-terms', 'hold-conflict-unnamed'],
  ['resize.raise', 'resize-raise-free'],
  ['resize.raise-needs-available', 'resize-overcommits'],
  ['resize.reduce-releases', 'resize-reduce-keeps-reserved'],
  ['resize.not-below-drawn', 'resize-below-drawn'],
  ['resize.released-refused', 'resize-revives-released'],
  ['draw.bills', 'draw-remaining-ignores-billed'],
  ['draw.settlement', 'draw-takes-margin'],
  ['draw.clamps-in-order', 'draw-exceeds-cap'],
  ['draw.capped-lines-marked', 'draw-capped-unmarked'],
  ['draw.zero-lines-kept', 'draw-drops-zero-lines'],
  ['draw.recomputable', 'draw-record-drops-count'],
  ['draw.per-written-out', 'draw-per-null'],
  ['draw.pass-through-receipt', 'draw-pass-through-unchecked'],
  ['draw.caller-owns-hold', 'draw-any-caller'],
  ['draw.refuses-invalid', 'draw-accepts-empty-lines'],
  ['release.returns-undrawn', 'release-returns-full-cap'],
  ['release.draw-refused', 'draw-after-release'],
  ['reservation.list', 'list-omits-holds'],
  ['reservation.read', 'read-reservation-newest-first'],
  ['reservation.read-unknown', 'unknown-hold-not-offered'],
  ['expiry.not-counted', 'expiry-never'],
  ['expiry.draw-refused', 'expiry-unswept-draw'],
  ['expiry.listed-released', 'expiry-list-stale'],
  ['expiry.window-resized', 'resize-ignores-window'],
  ['idempotency.reads-repeatable', 'balance-read-accumulates'],
  ['idempotency.credit-replay', 'credit-replay-applies'],
  ['idempotency.settle-replay', 'settle-replay-applies-twice'],
  ['idempotency.settle-replay-other-terms', 'settle-replay-other-terms-applies'],
  ['idempotency.reverse-replay', 'reverse-replay-amount-zero'],
  ['idempotency.reverse-draw-replay', 'reverse-draw-replay-restores-cap'],
  ['idempotency.adjust-replay', 'adjust-replay-applies'],
  ['idempotency.hold-replay', 'hold-replay-reserves-again'],
  ['idempotency.hold-other-terms', 'hold-reuse-keeps-first'],
  ['idempotency.resize-same-target', 'resize-same-target-applies'],
  ['idempotency.draw-replay', 'draw-replay-applies'],
  ['idempotency.release-replay', 'release-twice'],
  ['idempotency.separate-namespaces', 'shared-txn-namespace'],
  ['concurrency.parallel-draws', 'draw-race'],
  ['concurrency.parallel-holds', 'hold-race'],
  ['concurrency.parallel-replays', 'settle-race'],
  ['invariants.available-formula', 'reserved-counts-drawn'],
  ['invariants.conservation', 'credit-legs-unbalanced'],
  ['invariants.append-only', 'reverse-edits-original'],
  ['invariants.totals-net', 'totals-keep-reversed-spend'],
  ['invariants.integer-amounts', 'fractional-amounts'],
  ['finality.immediate-states', 'immediate-reports-pending'],
  ['finality.deferred-carries-state', 'deferred-omits-state', { finality: 'deferred' }],
  ['finality.absent-state-settled', 'settle-record-pending'],
  ['finality.refusal-no-state', 'refusal-carries-state'],
  ['finality.holds-immediate', 'hold-pending'],
  ['periods.balance-reads', 'balance-no-period', { periods: true }],
  ['periods.balance-reads', 'period-leak'],
  ['periods.reservation-records', 'reservation-no-opened-in', { periods: true }],
  ['periods.value-moving', 'settle-response-no-period', { periods: true }],
  ['errors.body', 'no-code-on-errors'],
  ['errors.code-status', 'invalid-request-400'],
  ['errors.no-ok-false', 'ok-false-refusals'],
  ['errors.messages-specific', 'generic-error-messages'],
  // A credit answered applied that the payer's figures do not show: a contradiction fails, never warns.
  ['concurrency.parallel-holds', 'funding-no-effect'],
];

describe('every check fails a binding that breaks exactly its rule', () => {
  test('every check has a fault case and every fault is used', () => {
    const covered = new Set(CASES.map(([id]) => id));
    assert.deepEqual(CHECKS.map((c) => c.id).filter((id) => !covered.has(id)), [], 'checks without a fault case');
    assert.deepEqual(CASES.map(([id]) => id).filter((id) => !CHECKS.some((c) => c.id === id)), [], 'cases naming no check');
    const used = new Set(CASES.map(([, fault]) => fault));
    assert.deepEqual(FAULTS.filter((f) => !used.has(f)), [], 'faults no case uses');
  });

  for (const [id, fault, options] of CASES) {
    test(`${id} fails under fault ${fault}`, async () => {
      const fake = await startFakeBinding({ ...options, fault });
      try {
        const report = await runConformance({ url: fake.url, fixtures: { ...FAKE_FIXTURES, prefunded: options?.prefunded ?? 0 } }, { only: [id] });
        const result = report.results.find((r) => r.id === id);
        assert.equal(result?.outcome, 'fail', `${id} should fail under ${fault}; got ${result?.outcome}: ${result?.reason ?? ''}`);
        assert.ok(result?.failure && result.failure.exchanges.length > 0, 'a failure carries the exchanges that show it');
        assert.doesNotMatch(result.failure.message, /unexpected error/, 'the check failed on the rule, not on a crash');
        assert.ok(formatFailure(result).includes('reproduce: curl '), 'a failure prints a curl line');
        assert.equal(report.exit_code, result.level === 'MUST' ? 1 : 0, 'exit code: 1 for a failed MUST, 0 for a failed SHOULD');
      } finally {
        await fake.close();
      }
    });
  }
});

describe('a failure lists every request of its check', () => {
  test('a failed replay check prints both settles, first then repeat, and every other request, in the order sent, as curl lines', async () => {
    const fake = await startFakeBinding({ fault: 'settle-replay-applies-twice' });
    try {
      const report = await runConformance({ url: fake.url, fixtures: FAKE_FIXTURES }, { only: ['idempotency.settle-replay'] });
      const result = report.results[0];
      assert.equal(result.outcome, 'fail');
      const failure = result.failure!;
      // The evidence is the repeat alone; the requests are the whole case.
      assert.equal(failure.exchanges.length, 1);
      assert.equal(failure.requests_sent, failure.requests.length);
      const seqs = failure.requests.map((e) => e.seq);
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'in the order sent');
      const settles = failure.requests.filter((e) => e.url.endsWith('/internal/ledger/charge'));
      assert.equal(settles.length, 2, 'the first settle and its repeat');
      const [first, repeat] = settles;
      assert.equal(JSON.parse(first.request_body!).txnId, JSON.parse(repeat.request_body!).txnId);
      assert.equal(repeat, failure.exchanges[0], 'the repeat is the evidence');

      const text = formatFailure(result);
      const listed = text.split('\n').filter((line) => /^ {4}\d+\. curl /.test(line));
      assert.deepEqual(listed, failure.requests.map((e) => `    ${e.seq}. ${curlFor(e)}`), 'every request, once, as a curl line');
      assert.ok(text.indexOf(`${first.seq}. ${curlFor(first)}`) < text.indexOf(`${repeat.seq}. ${curlFor(repeat)}`), 'the first settle before its repeat');
      assert.match(text, new RegExp(`every request of the check, in the order sent \\(${failure.requests_sent}\\)`));
    } finally {
      await fake.close();
    }
  });
});
