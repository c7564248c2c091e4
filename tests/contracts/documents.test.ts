import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ContractError } from '../../src/contracts/errors.ts';
import { parseMandate, validateMandate } from '../../src/contracts/mandate.ts';
import { parseManifest, validateManifest } from '../../src/contracts/manifest.ts';
import { parseAgentRef, resolveVersion } from '../../src/contracts/resolve.ts';
import { compileAuthorSchema, validationProblems } from '../../src/contracts/schema-check.ts';
import { manifestDocument } from '../helpers/contracts.ts';

const HOLON_YAML = `
id: holon-labs/invoice-pipeline
version: 0.4.0
summary: Extracts the lines of an invoice
capabilities: [invoice.extract]
interface:
  input:
    type: object
    required: [file]
    properties:
      file: { type: string, pattern: "^holon://files/[a-z0-9]+$" }
  output: { type: object }
  errors:
    no_table_found: { billed: false, description: The file has no table }
price: { model: per_unit, amount: "0.01", unit: page, max: "3.00", currency: EUR }
runtime: { kind: mcp, endpoint: "https://labs.example/mcp", tool: extract }
calls:
  - capability: extraction.table
    max_cost: "0.05"
  - agent: holon-labs/csv-profile@^1
    max_cost: "0.01"
downstream: { mode: passthrough, cap: "0.10" }
license: Apache-2.0
source: { repository: "https://github.com/holon-labs/invoice-pipeline" }
lineage: { fork_of: acme/invoices@1.2.0, royalty: "0.15" }
examples:
  - input: { file: "holon://files/abc123" }
    output: { lines: [] }
`;

/** A minimal valid manifest document, with top-level fields replaced by `over` (undefined removes one). */
const doc = manifestDocument;

/** Asserts that validating `document` throws a ContractError with this code, field and message. */
function refuses(document: unknown, code: string, field: string | null, message: RegExp): void {
  assert.throws(
    () => validateManifest(document),
    (error: unknown) => {
      assert.ok(error instanceof ContractError, String(error));
      assert.equal(error.code, code);
      assert.equal(error.field, field);
      assert.match(error.message, message);
      return true;
    },
  );
}

describe('manifest', () => {
  it('parses holon.yaml into micro-units, with the schema defaults filled in', () => {
    const { manifest } = parseManifest(HOLON_YAML);
    assert.deepEqual(manifest.price, { model: 'per_unit', currency: 'EUR', amount_micros: 10_000, unit: 'page', max_micros: 3_000_000 });
    assert.deepEqual(manifest.downstream, { mode: 'passthrough', cap_micros: 100_000 });
    assert.deepEqual(manifest.calls, [
      { capability: 'extraction.table', agent: null, max_cost_micros: 50_000 },
      { capability: null, agent: 'holon-labs/csv-profile@^1', max_cost_micros: 10_000 },
    ]);
    assert.deepEqual(manifest.lineage, { fork_of: 'acme/invoices@1.2.0', royalty_ppm: 150_000 });
    assert.equal(manifest.interface.charge_on, 'success');
    assert.equal(manifest.runtime.timeout_s, 60);
    assert.deepEqual(manifest.interface.errors, { no_table_found: { billed: false, description: 'The file has no table' } });
  });

  it('checks inputs and outputs against the author schemas, naming the field', () => {
    const { check } = parseManifest(HOLON_YAML);
    assert.equal(check.input({ file: 'holon://files/abc' }), null);
    assert.deepEqual(check.input({ file: 'https://evil.example' }), ['input.file: must match pattern "^holon://files/[a-z0-9]+$"']);
    assert.deepEqual(check.input({}), ['input.file: is required']);
    assert.deepEqual(check.output([]), ['output: must be object']);
  });

  it('does not modify the document it validates', () => {
    const document = doc();
    const before = structuredClone(document);
    validateManifest(document);
    assert.deepEqual(document, before);
  });

  it('refuses money written as a YAML number, with a hint', () => {
    refuses(doc({ price: { model: 'per_run', amount: 0.1, currency: 'EUR' } }), 'invalid_manifest', 'price.amount', /price\.amount: must be a decimal string; quote it, e.g\. "0\.10"/);
  });

  it('refuses a document that is not an object', () => {
    refuses(null, 'invalid_manifest', '(document)', /^\(document\): must be object$/);
    refuses([], 'invalid_manifest', '(document)', /must be object/);
  });

  it('refuses an unknown field and a missing one', () => {
    refuses(doc({ pricing: {} }), 'invalid_manifest', 'pricing', /pricing: is not a known field/);
    refuses(doc({ license: undefined }), 'invalid_manifest', 'license', /license: is required/);
  });

  it('requires each price model its own fields and refuses the others', () => {
    refuses(doc({ price: { model: 'per_unit', amount: '0.01', unit: 'page', currency: 'EUR' } }), 'invalid_manifest', 'price.max', /price\.max: is required/);
    refuses(doc({ price: { model: 'per_run', amount: '0.10', max: '1', currency: 'EUR' } }), 'invalid_manifest', 'price.max', /price\.max: is not allowed here/);
    refuses(doc({ price: { model: 'free', amount: '0.10', currency: 'EUR' } }), 'invalid_manifest', 'price.amount', /is not allowed here/);
  });

  it('refuses a webhook runtime priced per_unit or quote (gateway §6)', () => {
    const webhook = { kind: 'webhook', endpoint: 'https://hooks.example/run' };
    refuses(
      doc({ runtime: webhook, price: { model: 'quote', max: '1.00', currency: 'EUR' } }),
      'invalid_manifest',
      'price.model',
      /a webhook runtime is priced free or per_run, not quote/,
    );
    refuses(doc({ runtime: webhook, price: { model: 'per_unit', amount: '0.01', unit: 'page', max: '1', currency: 'EUR' } }), 'invalid_manifest', 'price.model', /not per_unit/);
    assert.equal(validateManifest(doc({ runtime: webhook })).manifest.runtime.tool, null);
  });

  it('requires an endpoint and a tool for mcp, and bounds timeout_s at 300', () => {
    refuses(doc({ runtime: { kind: 'mcp', endpoint: 'https://acme.example/mcp' } }), 'invalid_manifest', 'runtime.tool', /runtime\.tool: is required/);
    refuses(doc({ runtime: { kind: 'dev', limits: { timeout_s: 301 } } }), 'invalid_manifest', 'runtime.limits.timeout_s', /must be <= 300/);
    assert.equal(validateManifest(doc({ runtime: { kind: 'dev', limits: { timeout_s: 300 } } })).manifest.runtime.timeout_s, 300);
  });

  it('ties downstream to calls', () => {
    const calls = [{ capability: 'extraction.table', max_cost: '0.05' }];
    refuses(doc({ calls }), 'invalid_manifest', 'downstream', /downstream: is required when calls is non-empty/);
    refuses(doc({ downstream: { mode: 'included' } }), 'invalid_manifest', 'downstream', /only allowed with a non-empty calls/);
    refuses(doc({ calls, downstream: { mode: 'passthrough' } }), 'invalid_manifest', 'downstream.cap', /downstream\.cap: is required/);
    refuses(doc({ calls, downstream: { mode: 'included', cap: '1' } }), 'invalid_manifest', 'downstream.cap', /is not allowed here/);
    refuses(doc({ calls: [{ agent: 'acme/x@not-a-range', max_cost: '1' }], downstream: { mode: 'included' } }), 'invalid_manifest', 'calls[0].agent', /is not a semver range/);
  });

  it('refuses declared errors the gateway owns, a billed over_budget, and billed without charge_on attempt', () => {
    const iface = (errors: unknown, charge_on = 'attempt') => ({ interface: { input: true, output: true, errors, charge_on } });
    refuses(doc(iface({ timeout: { billed: false } })), 'invalid_manifest', 'interface.errors.timeout', /a code the gateway emits itself/);
    refuses(doc(iface({ over_budget: { billed: true } })), 'invalid_manifest', 'interface.errors.over_budget.billed', /never billed/);
    refuses(doc(iface({ quota: { billed: true } }, 'success')), 'invalid_manifest', 'interface.errors.quota.billed', /only applies under interface\.charge_on: attempt/);
    refuses(doc(iface({ Bad: { billed: false } })), 'invalid_manifest', 'interface.errors', /must match pattern/);
  });

  it('refuses an author pattern that does not run on RE2, naming it', () => {
    const input = { type: 'object', properties: { code: { type: 'string', pattern: '^(a)\\1$' } } };
    refuses(doc({ interface: { input, output: true } }), 'invalid_schema', 'interface.input.properties.code.pattern', /"\^\(a\)\\\\1\$" does not run on RE2/);
    const lookahead = { type: 'object', patternProperties: { '^(?=x)': true } };
    refuses(doc({ interface: { input: true, output: lookahead } }), 'invalid_schema', 'interface.output.patternProperties["^(?=x)"]', /does not run on RE2/);
  });

  it('runs author patterns on RE2: a catastrophic backtracking pattern answers at once', () => {
    const input = { type: 'string', pattern: '^(a+)+$' };
    const { check } = validateManifest(doc({ interface: { input, output: true } }));
    const started = process.hrtime.bigint();
    assert.deepEqual(check.input(`${'a'.repeat(50_000)}!`), ['input: must match pattern "^(a+)+$"']);
    assert.ok(process.hrtime.bigint() - started < 1_000_000_000n);
  });

  it('refuses an invalid author schema and an example that breaks the interface', () => {
    refuses(doc({ interface: { input: { type: 'strin' }, output: true } }), 'invalid_schema', 'interface.input', /not a valid JSON Schema 2020-12/);
    refuses(doc({ examples: [{ input: {}, output: 3 }] }), 'invalid_manifest', 'examples[0]', /examples\[0\]: output: must be object/);
  });

  it('refuses a version that is not strict semver and a YAML syntax error', () => {
    refuses(doc({ version: '1.2' }), 'invalid_manifest', 'version', /must match pattern/);
    assert.throws(() => parseManifest('id: [unclosed'), (e: unknown) => e instanceof ContractError && e.code === 'invalid_manifest' && /^holon\.yaml: /.test(e.message));
    assert.throws(() => parseManifest('id: a\nid: b'), /holon\.yaml: Map keys must be unique/);
  });

  it('accepts SPDX expressions and proprietary', () => {
    for (const license of ['MIT OR Apache-2.0', 'GPL-2.0-only WITH Classpath-exception-2.0', 'proprietary']) {
      assert.equal(validateManifest(doc({ license })).manifest.license, license);
    }
    refuses(doc({ license: 'MIT; rm -rf' }), 'invalid_manifest', 'license', /must match pattern/);
  });
});

const MANDATE = {
  id: 'alice/bookkeeping-q4',
  issuer: 'alice',
  grantee: 'alice/assistant',
  allow: { agents: ['holon-labs/*'] },
  budget: { total: '10.00', currency: 'EUR', fx: { USD: '0.92' } },
};

describe('mandate', () => {
  it('normalizes with defaults: nothing denied, no approval, depth 2, data may go remote, published off', () => {
    const mandate = validateMandate(MANDATE);
    assert.deepEqual(mandate, {
      id: 'alice/bookkeeping-q4',
      issuer: 'alice',
      grantee: 'alice/assistant',
      allow: { agents: ['holon-labs/*'], capabilities: [], published: false },
      deny: { agents: [], capabilities: [] },
      require: { open_source: false, runtimes: null },
      data: { remote: true },
      approval: { above_micros: null, agents: [], capabilities: [] },
      budget: { total_micros: 10_000_000, currency: 'EUR', fx: { USD: 920_000_000n } },
      delegation: { max_depth: 2 },
      expires_at_ms: null,
    });
  });

  it('parses YAML, with approval.above and expires_at', () => {
    const mandate = parseMandate(`
id: alice/q4
issuer: alice
grantee: alice/assistant
allow: { capabilities: ["extraction.*"] }
approval: { above: "1.00" }
budget: { total: "10.00", currency: EUR }
expires_at: "2026-12-31T00:00:00Z"
`);
    assert.equal(mandate.approval.above_micros, 1_000_000);
    assert.equal(mandate.expires_at_ms, Date.UTC(2026, 11, 31));
  });

  it('refuses a root mandate outside its issuer namespace, a bad range, a zero rate, a rate for its own currency', () => {
    const refusesMandate = (document: unknown, field: string, message: RegExp) =>
      assert.throws(() => validateMandate(document), (e: unknown) => e instanceof ContractError && e.code === 'invalid_mandate' && e.field === field && message.test(e.message));
    refusesMandate({ ...MANDATE, id: 'bob/q4' }, 'id', /must be in the issuer's namespace "alice\/"/);
    refusesMandate({ ...MANDATE, deny: { agents: ['acme/x@nope'] } }, 'deny.agents[0]', /is not a semver range/);
    refusesMandate({ ...MANDATE, budget: { total: '1', currency: 'EUR', fx: { USD: '0.000' } } }, 'budget.fx.USD', /must be more than 0/);
    refusesMandate({ ...MANDATE, budget: { total: '1', currency: 'EUR', fx: { EUR: '1' } } }, 'budget.fx.EUR', /budget's own currency/);
    refusesMandate({ ...MANDATE, delegation: { max_depth: 9 } }, 'delegation.max_depth', /must be <= 8/);
    refusesMandate({ ...MANDATE, allow: { agents: ['acme'] } }, 'allow.agents[0]', /must match pattern/);
  });

  it('accepts a sub-mandate issued by an agent, with its id in the root namespace', () => {
    const sub = validateMandate({ ...MANDATE, id: 'alice/bookkeeping-q4.r4', issuer: 'alice/assistant', grantee: 'holon-labs/invoice-pipeline@0.4.0' });
    assert.equal(sub.issuer, 'alice/assistant');
  });
});

describe('resolve: ns/name[@range] → highest listed version in range (gateway §1)', () => {
  const listed = ['1.0.0', '1.4.2', '1.10.0', '2.0.0', '2.1.0-beta.1'];
  it('picks the highest in range', () => {
    assert.equal(resolveVersion('acme/extract@^1', listed), '1.10.0');
    assert.equal(resolveVersion('acme/extract@~1.4', listed), '1.4.2');
    assert.equal(resolveVersion('acme/extract@1.0.0', listed), '1.0.0');
    assert.equal(resolveVersion('acme/extract@^3', listed), null);
  });
  it('without a range picks the highest release; a prerelease only when the range names one', () => {
    assert.equal(resolveVersion('acme/extract', listed), '2.0.0');
    assert.equal(resolveVersion('acme/extract@2.1.0-beta.1', listed), '2.1.0-beta.1');
  });
  it('refuses a malformed reference', () => {
    assert.deepEqual(parseAgentRef('acme/extract@^1'), { id: 'acme/extract', range: '^1' });
    for (const bad of ['extract', 'Acme/extract', 'acme/extract@', 'acme/extract@banana', 'a/b']) {
      assert.throws(() => parseAgentRef(bad), (e: unknown) => e instanceof ContractError && e.code === 'invalid_ref', bad);
    }
  });
});

describe('schema-check', () => {
  it('lists problems with array indexes and escaped keys', () => {
    const validate = compileAuthorSchema({ type: 'object', properties: { 'a/b': { type: 'array', items: { type: 'integer' } } } }, 'interface.input');
    assert.deepEqual(validationProblems(validate, { 'a/b': [1, 'x'] }, 'input'), ['input.a/b[1]: must be integer']);
  });
  it('refuses a schema that is not an object or a boolean', () => {
    assert.throws(() => compileAuthorSchema('nope', 'interface.output'), /interface\.output: must be a JSON Schema/);
  });
});
