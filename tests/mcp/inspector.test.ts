/**
 * The gateway's MCP server at `/mcp` (gateway §7 "Connecting Claude Code") driven by a client we
 * did not write: the MCP Inspector's command-line mode (`@modelcontextprotocol/inspector-cli`
 * 1.0.3, bin `mcp-inspector-cli`), over Streamable HTTP (`--transport http`). The gateway runs
 * `agents/host.mjs` on a free port (`agents_host_port: 0`), which it lists as csv-profile's
 * endpoint, so parallel runs never collide.
 *
 * How this CLI version is driven, read from its build (`build/cli.js`, `build/index.js`):
 * - `mcp-inspector-cli --cli <url> --transport http --method tools/list` (the launcher spawns
 *   `node build/index.js <url> --transport http ...`);
 * - `--method tools/call --tool-name call_agent --tool-arg k=v ...`: each value is parsed as JSON
 *   when it is JSON, else kept as a string, so the nested `input` object is passed as
 *   `input={"csv":"..."}` and `agent=holon-labs/csv-profile` stays a string. The target URL must
 *   come before `--tool-arg`, which takes every following word as another pair;
 * - it prints the result as JSON on stdout, and its v1 deprecation notice on stderr.
 *
 * Working directory: `build/index.js` picks the `package.json` it imports by testing
 * `fs.existsSync('../package.json')` against the working directory, but imports it relative to
 * itself; from a directory without `../package.json` (such as this repository's root) it imports
 * `node_modules/@modelcontextprotocol/package.json`, which does not exist, and exits with
 * ERR_MODULE_NOT_FOUND before connecting (modelcontextprotocol/inspector#1334). It is therefore
 * run from its own `build/` directory, where both resolve to its own `package.json`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { test } from 'node:test';
import { useDevGateway } from '../helpers/gateway.ts';

const run = promisify(execFile);

const INSPECTOR = fileURLToPath(new URL('../../node_modules/.bin/mcp-inspector-cli', import.meta.url));
/** The working directory the inspector needs (see the module comment). */
const INSPECTOR_CWD = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/inspector-cli/build/', import.meta.url));
/** A bound on each inspector run. */
const INSPECTOR_TIMEOUT_MS = 20_000;

const gateway = useDevGateway({ agent_dirs: ['examples', 'agents'], agents_host_port: 0, exclude: ['holon-labs/summarize'] });

/** Runs the inspector's CLI mode against the gateway's `/mcp` with `args`; returns the JSON it printed. */
async function inspector(...args: string[]): Promise<any> {
  const { stdout } = await run(process.execPath, [INSPECTOR, '--cli', `${gateway.url}/mcp`, '--transport', 'http', ...args], {
    cwd: INSPECTOR_CWD,
    timeout: INSPECTOR_TIMEOUT_MS,
    maxBuffer: 4 * 1024 * 1024,
  });
  return JSON.parse(stdout);
}

test('tools/list shows the four tools', async () => {
  const { tools } = await inspector('--method', 'tools/list');
  assert.deepEqual(
    tools.map((tool: { name: string }) => tool.name),
    ['search_agents', 'call_agent', 'read_receipts', 'list_approvals'],
  );
});

test('tools/call of call_agent with holon-labs/csv-profile and a CSV input returns the profile and its receipt', async () => {
  const csv = 'city,population\n"Paris, FR",2102650\nLyon,522250\n';
  const result = await inspector('--method', 'tools/call', '--tool-name', 'call_agent', '--tool-arg', 'agent=holon-labs/csv-profile', `input=${JSON.stringify({ csv })}`);
  assert.equal(result.isError, false);
  const content = result.structuredContent;
  assert.deepEqual(JSON.parse(result.content[0].text), content);
  assert.equal(content.status, 'succeeded');
  assert.deepEqual(content.output, {
    delimiter: ',',
    rows: 2,
    columns: [
      { name: 'city', type: 'string', nulls: 0, distinct: 2, min: 'Lyon', max: 'Paris, FR', samples: ['Paris, FR', 'Lyon'] },
      { name: 'population', type: 'integer', nulls: 0, distinct: 2, min: '522250', max: '2102650', samples: ['2102650', '522250'] },
    ],
  });
  assert.equal(content.receipt.agent, 'holon-labs/csv-profile@0.1.0');
  assert.equal(content.receipt.mandate, 'dev/sandbox');
  assert.equal(content.receipt.billed, true);
  assert.deepEqual(content.receipt.cost, { own: '0.002', downstream: '0.00', total: '0.002' });
});
