/**
 * The client commands as a newcomer meets them (issue 13 §4), each run as `node src/bin.mjs`
 * against a dev gateway with the example agents and mandates: `--version`, `agents`,
 * `accounts`, `mandate`, `receipts --limit`, `approvals [approve|reject ID]`, `call --wait`, the
 * exit code of a held call, the versions named when a range matches none, and the one-line
 * messages for an unreachable gateway and a URL without a scheme.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import packageJson from '../../package.json' with { type: 'json' };
import { EXIT } from '../../src/cli/client-commands.ts';
import { closedPort, holon, jsonDocuments, type CliResult } from '../helpers/cli.ts';
import { useDevGateway } from '../helpers/gateway.ts';
import { setUp } from '../helpers/hooks.ts';

const gateway = useDevGateway();
let at: string[];

setUp(() => {
  at = ['--gateway', gateway.url];
});

/** Asserts a command succeeded and returns its one JSON document. */
function answered(result: CliResult): any {
  assert.equal(result.code, EXIT.ok, result.stderr);
  const [body, ...rest] = jsonDocuments(result.stdout);
  assert.equal(rest.length, 0);
  return body;
}

const ESTIMATE = ['call', 'acme/estimate', '--input', '{"tasks":["plan"]}'];

test('holon --version prints the version of the package', async () => {
  const result = await holon(['--version']);
  assert.equal(result.code, 0);
  assert.equal(result.stdout, `${packageJson.version}\n`);
});

test('every client command facing an unreachable gateway says so in one line naming the URL and what to do, and exits 4', async () => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const commands = [['call', 'acme/estimate'], ['receipts'], ['receipts', 'r1'], ['agents'], ['accounts'], ['mandate', 'dev/sandbox'], ['approvals'], ['approvals', 'approve', 'a1'], ['earnings'], ['publish', 'package.json']];
  const results = await Promise.all(commands.map((command) => holon([...command, '--gateway', url])));
  for (const [i, result] of results.entries()) {
    assert.equal(result.code, EXIT.unreachable, commands[i].join(' '));
    assert.equal(result.stdout, '');
    assert.equal(
      result.stderr,
      `holon: no gateway answers at ${url} (ECONNREFUSED): start one with \`npx holon serve\`, or pass --gateway URL (or set HOLON_GATEWAY_URL) for a gateway that runs elsewhere\n`,
    );
  }
});

test('a gateway URL without a scheme is refused with the URL to write, from the option or HOLON_GATEWAY_URL', async () => {
  const fromOption = await holon(['receipts', '--gateway', '127.0.0.1:4000']);
  assert.equal(fromOption.code, EXIT.usage);
  assert.equal(fromOption.stderr, 'holon: --gateway 127.0.0.1:4000 has no scheme: write http://127.0.0.1:4000\n');
  const fromEnv = await holon(['accounts'], { env: { HOLON_GATEWAY_URL: 'localhost:4000' } });
  assert.equal(fromEnv.code, EXIT.usage);
  assert.equal(fromEnv.stderr, 'holon: --gateway localhost:4000 has no scheme: write http://localhost:4000\n');
});

test('holon agents lists the catalogue, by words too; holon accounts shows the dev account', async () => {
  const all = answered(await holon(['agents', ...at]));
  assert.deepEqual(
    all.agents.map((agent: { id: string }) => agent.id).sort(),
    ['acme/estimate', 'acme/table-extract', 'holon-labs/invoice-pipeline', 'holon-labs/word-stats', 'lena/table-extract-plus'],
  );
  const words = answered(await holon(['agents', 'table', ...at]));
  assert.deepEqual(words.agents.map((agent: { id: string }) => agent.id).sort(), ['acme/table-extract', 'holon-labs/invoice-pipeline', 'lena/table-extract-plus']);
  const accounts = answered(await holon(['accounts', ...at]));
  assert.equal(accounts.currency, 'EUR');
  assert.ok(accounts.accounts.some((row: { account: string }) => row.account === 'dev'));
});

test('holon mandate ID shows the budget: spent, reserved and remaining', async () => {
  const before = answered(await holon(['mandate', 'dev/sandbox', ...at]));
  assert.equal(before.mandate.id, 'dev/sandbox');
  assert.deepEqual(before.budget, { currency: 'EUR', total: '50.00', spent: before.budget.spent, reserved: '0.00', remaining: before.budget.remaining });
  answered(await holon([...ESTIMATE, ...at]));
  const afterCall = answered(await holon(['mandate', 'dev/sandbox', ...at]));
  assert.equal(Math.round((Number(afterCall.budget.spent) - Number(before.budget.spent)) * 100), 1, 'the call cost 0.01');
  const missing = await holon(['mandate', 'dev/nothing', ...at]);
  assert.equal(missing.code, EXIT.refused);
  assert.equal((jsonDocuments(missing.stdout)[0] as { code: string }).code, 'no_such_mandate');
  assert.equal((await holon(['mandate', 'sandbox', ...at])).code, EXIT.usage);
});

test('holon receipts --limit N answers at most N receipt trees, newest first; a bad limit is refused', async () => {
  const call = answered(await holon([...ESTIMATE, ...at]));
  const listed = answered(await holon(['receipts', '--limit', '1', ...at]));
  assert.deepEqual(listed.receipts.map((receipt: { id: string }) => receipt.id), [call.receipt.id]);
  assert.equal(answered(await holon(['receipts', call.receipt.id, ...at])).id, call.receipt.id);
  const bad = await holon(['receipts', '--limit', '0', ...at]);
  assert.equal(bad.code, EXIT.usage);
  assert.equal(bad.stderr, 'holon: --limit 0: give a whole number from 1 to 500\n');
});

test('a version range no listed version matches names the versions that exist', async () => {
  const result = await holon(['call', 'acme/estimate@^9', '--input', '{"tasks":["plan"]}', ...at]);
  assert.equal(result.code, EXIT.refused);
  const body = jsonDocuments(result.stdout)[0] as { code: string; error: string };
  assert.equal(body.code, 'no_such_agent');
  assert.equal(body.error, 'no listed version of acme/estimate matches ^9: the versions listed are 1.0.0');
});

test('a held call exits 3 and says how to decide; holon approvals lists it and reject refuses it', async () => {
  const held = await holon([...ESTIMATE, '--mandate', 'dev/careful', ...at]);
  assert.equal(held.code, EXIT.held);
  const body = jsonDocuments(held.stdout)[0] as { approval: { id: string; status: string }; receipt: { status: string } };
  assert.equal(body.approval.status, 'pending');
  assert.equal(body.receipt.status, 'pending_approval');
  const id = body.approval.id;
  assert.match(held.stderr, new RegExp(`^holon: held for approval ${id} \\(.*\\): \`npx holon approvals approve ${id}\` runs it`));
  const pending = answered(await holon(['approvals', ...at]));
  assert.ok(pending.approvals.some((approval: { id: string }) => approval.id === id));
  const rejected = answered(await holon(['approvals', 'reject', id, ...at]));
  assert.equal(rejected.approval.status, 'rejected');
  const again = await holon(['approvals', 'approve', id, ...at]);
  assert.equal(again.code, EXIT.refused);
  assert.equal((jsonDocuments(again.stdout)[0] as { code: string }).code, 'approval_decided');
  assert.equal((await holon(['approvals', 'accept', id, ...at])).code, EXIT.usage);
});

test('holon call --wait prints the output once another terminal approves the held call', async () => {
  const waiting = holon([...ESTIMATE, '--mandate', 'dev/careful', '--wait', '120', ...at]);
  let id: string | undefined;
  // Bounded: the held call appears within the waiting command's own start-up.
  for (let attempt = 0; attempt < 600 && !id; attempt++) {
    const list = (await (await fetch(`${gateway.url}/v0/approvals`)).json()) as { approvals: Array<{ id: string; status: string }> };
    id = list.approvals.find((approval) => approval.status === 'pending')?.id;
    if (!id) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.ok(id, 'the waiting call was held');
  const approved = answered(await holon(['approvals', 'approve', id, ...at]));
  assert.deepEqual(approved.output, { hours: 1.5 });
  const result = await waiting;
  assert.equal(result.code, EXIT.ok, result.stderr);
  const [heldAnswer, finalAnswer] = jsonDocuments(result.stdout) as Array<{ approval?: { id: string }; output?: unknown; receipt: { id: string; status: string } }>;
  assert.equal(heldAnswer.approval!.id, id);
  assert.deepEqual(finalAnswer.output, { hours: 1.5 });
  assert.equal(finalAnswer.receipt.id, heldAnswer.receipt.id);
  assert.equal(finalAnswer.receipt.status, 'succeeded');
  assert.match(result.stderr, new RegExp(`waiting up to 120 s for a decision: \`npx holon approvals approve ${id}\``));
});
