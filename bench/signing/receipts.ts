/**
 * What signing every receipt the gateway answers costs (issue 23 §2): signs receipt trees of
 * `--children` child receipts each (default 2, so 3 receipts a tree) `--trees` times (default
 * 2000) with an Ed25519 key imported as the stored key is (a non-extractable WebCrypto key), as
 * `signReceiptTree` does for `GET /v0/receipts`, `POST /v0/calls` and the MCP tools, and prints
 * the microseconds per receipt, wall and CPU. No database: receipts without a sub-mandate read
 * nothing.
 *
 *     node --import tsx bench/signing/receipts.ts --trees 2000 --children 2
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { exportJWK, generateKeyPair, importJWK } from 'jose';
import type { Knex } from 'knex';
import { signReceiptTree } from '../../src/gateway/signatures.ts';
import type { ReceiptTree } from '../../src/gateway/receipts.ts';
import { Signer } from '../../src/signing/signer.ts';

const { values } = parseArgs({ options: { trees: { type: 'string', default: '2000' }, children: { type: 'string', default: '2' } } });
const trees = Number(values.trees);
const children = Number(values.children);
if (!Number.isSafeInteger(trees) || trees < 1 || trees > 1_000_000) throw new Error(`--trees ${values.trees}: 1 to 1000000`);
if (!Number.isSafeInteger(children) || children < 0 || children > 100) throw new Error(`--children ${values.children}: 0 to 100`);

/** A finished receipt (gateway §4) as the gateway stores it, with `calls` children. */
function receipt(id: string, parent: string | null, calls: ReceiptTree[]): ReceiptTree {
  return {
    id, parent, mandate: 'alice/sandbox', caller: 'alice/bot', agent: 'holon-labs/summarize@1.2.0', capability: 'summarize', status: 'succeeded',
    approval: null, worst_case: '0.250000', currency: 'EUR', payer: 'alice', sub_mandate: null, billed: true,
    cost: { own: '0.120000', downstream: '0.030000', total: '0.150000' }, splits: [{ to: 'holon-labs', amount: '0.108000' }, { to: 'holon', amount: '0.012000' }],
    children: calls.map((call) => call.id), duration_ms: 812, error: null, created_at: '2026-12-05T06:40:00.000000Z', calls,
  };
}

const pair = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
const private_key = (await importJWK(await exportJWK(pair.privateKey), 'EdDSA', { extractable: false })) as CryptoKey;
const signer = new Signer('https://holon.example', { kid: 'k-bench', private_key }, async () => []);
const tree = receipt('r1', null, Array.from({ length: children }, (_, i) => receipt(`r${i + 2}`, 'r1', [])));
const none = null as unknown as Knex;

for (let i = 0; i < 200; i++) await signReceiptTree(none, signer, tree); // warm-up
const started = performance.now();
const cpu = process.cpuUsage();
for (let i = 0; i < trees; i++) await signReceiptTree(none, signer, tree);
const elapsed_ms = performance.now() - started;
const { user, system } = process.cpuUsage(cpu);
const receipts = trees * (children + 1);
// CPU time as well as wall time: on a shared machine the wall time counts other processes' turns.
console.log(
  `${receipts} receipts in ${trees} trees of ${children + 1}: ${((elapsed_ms * 1000) / receipts).toFixed(1)} µs per receipt (wall), ` +
    `${((user + system) / receipts).toFixed(1)} µs per receipt (CPU), ${(elapsed_ms / trees).toFixed(3)} ms per tree (wall)`,
);
