/**
 * The dependency rules of `.dependency-cruiser.cjs` (issue 25 §6 "Keep it so"). `npm run lint:deps`
 * runs the checker with them on the repository; here the same command runs on a small throwaway
 * tree laid out like the repository, where each import is either allowed or breaks exactly one
 * rule, and the test reads what was reported: every broken rule, and nothing else.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const CONFIG = fileURLToPath(new URL('../../.dependency-cruiser.cjs', import.meta.url));
const DEPCRUISE = fileURLToPath(new URL('../../node_modules/dependency-cruiser/bin/dependency-cruise.mjs', import.meta.url));

/** The throwaway tree: path from its root → file text. Each import says whether it is allowed. */
const TREE: Record<string, string> = {
  'generated/clearing/types.ts': 'export type OperationName = "settle";\n',
  'src/contracts/money.ts': 'export const MICROS_PER_UNIT = 1_000_000;\n',
  // allowed: a room imports a lower one; a migration list imports its migrations; db runs them.
  'src/db/index.ts': 'import { MIGRATIONS } from "../../migrations/index.ts";\nexport const count = MIGRATIONS.length;\n',
  'src/gateway/lifecycle.ts': 'import { MICROS_PER_UNIT } from "../contracts/money.ts";\nexport const unit = MICROS_PER_UNIT;\n',
  'src/mcp/server.ts': 'import { unit } from "../gateway/lifecycle.ts";\nexport const tools = [unit];\n',
  // upward-import: the gateway room imports the mcp room, which sits above it.
  'src/gateway/app.ts': 'import { tools } from "../mcp/server.ts";\nexport const app = { tools };\n',
  // no-circular: a circle made of one type-only import and one value import.
  'src/clearing/op-keys.ts': 'import type { LedgerOp } from "./write-path.ts";\nexport const keysOf = (op: LedgerOp) => [op.op];\n',
  'src/clearing/write-path.ts': 'import { keysOf } from "./op-keys.ts";\nexport type LedgerOp = { op: string };\nexport const keys = keysOf;\n',
  // room-not-in-order: a folder of src/ that is in no room of the order.
  'src/widgets/panel.ts': 'import { MICROS_PER_UNIT } from "../contracts/money.ts";\nexport const panel = MICROS_PER_UNIT;\n',
  // migration-imports-src, then migration-imports-migration.
  'migrations/001_ledger.ts': 'import { MICROS_PER_UNIT } from "../src/contracts/money.ts";\nexport const up = MICROS_PER_UNIT;\n',
  'migrations/002_more.ts': 'import { up as first } from "./001_ledger.ts";\nexport const up = first;\n',
  'migrations/index.ts': 'import * as m001 from "./001_ledger.ts";\nimport * as m002 from "./002_more.ts";\nexport const MIGRATIONS = [m001, m002];\n',
  // allowed: the kit imports node's own modules and generated/; conformance-kit-stands-alone: it imports src/.
  'conformance/src/check.ts': [
    'import { readFile } from "node:fs/promises";',
    'import type { OperationName } from "../../generated/clearing/types.ts";',
    'import { MICROS_PER_UNIT } from "../../src/contracts/money.ts";',
    'export const check = { readFile, op: "settle" as OperationName, unit: MICROS_PER_UNIT };',
    '',
  ].join('\n'),
  // allowed: a test imports anything; checks-are-leaves: a shipped agent (.mjs) imports a test helper.
  'tests/helpers/app.ts': 'import { app } from "../../src/gateway/app.ts";\nexport const helper = app;\n',
  'agents/host.mjs': 'import { helper } from "../tests/helpers/app.ts";\nexport const host = helper;\n',
};

/** What the checker reported, one line per violation (a circle once, from one of its modules): `rule: from → to`, sorted. */
function reported(root: string): string[] {
  const run = spawnSync(process.execPath, [DEPCRUISE, '--config', CONFIG, '--output-type', 'json', 'src', 'migrations', 'conformance', 'generated', 'tests', 'agents'], { cwd: root, encoding: 'utf8' });
  assert.equal(run.error, undefined);
  const result = JSON.parse(run.stdout) as { summary: { violations: { rule: { name: string; severity: string }; from: string; to: string }[] } };
  for (const v of result.summary.violations) assert.equal(v.rule.severity, 'error', `${v.rule.name} is an error, not a ${v.rule.severity}`);
  return result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort();
}

describe('dependency rules (.dependency-cruiser.cjs)', () => {
  let root = '';

  before(() => {
    root = mkdtempSync(join(tmpdir(), 'holon-deps-'));
    for (const [path, text] of Object.entries(TREE)) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
  });

  after(() => rmSync(root, { recursive: true, force: true }));

  it('reports an upward import, a type-only circle, a room not in the order, a migration importing src/ or another migration, the kit importing src/ and an import of tests/; nothing else', () => {
    assert.deepEqual(reported(root), [
      'checks-are-leaves: agents/host.mjs → tests/helpers/app.ts',
      'conformance-kit-stands-alone: conformance/src/check.ts → src/contracts/money.ts',
      'migration-imports-migration: migrations/002_more.ts → migrations/001_ledger.ts',
      'migration-imports-src: migrations/001_ledger.ts → src/contracts/money.ts',
      'no-circular: src/clearing/op-keys.ts → src/clearing/write-path.ts',
      'room-not-in-order: src/widgets/panel.ts → src/contracts/money.ts',
      'upward-import: src/gateway/app.ts → src/mcp/server.ts',
    ]);
  });
});
