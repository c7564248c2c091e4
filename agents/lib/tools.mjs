/**
 * Loading the tools the reference host serves: every `agents/<name>/` holding both `holon.yaml`
 * and `tool.mjs`. The manifest is the single source of a tool's contract: its name is
 * `runtime.tool`, its description `summary`, its schemas `interface.input` and `interface.output`
 * (JSON Schema 2020-12, served verbatim in `tools/list`). `tool.mjs` only brings the code:
 *
 *   export default async function run(input, ctx) → output
 *
 * with the same `ctx` as a dev agent (gateway §6) minus `call`: `units(n)`, `quote(x)`,
 * `error(code, message?)`, `signal`, `max_cost`.
 */
import { access, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';

/**
 * @typedef {object} Tool
 * @property {string} id the agent id, `ns/name`
 * @property {string} name the MCP tool name, `runtime.tool`
 * @property {string} description the manifest's `summary`
 * @property {object} inputSchema `interface.input`
 * @property {object} outputSchema `interface.output`
 * @property {(input: unknown, ctx: object) => unknown} run the default export of `tool.mjs`
 * @property {import('ajv').ValidateFunction} checkInput
 * @property {import('ajv').ValidateFunction} checkOutput
 */

/**
 * The tools under `dir`, sorted by directory name, leaving out the agent ids in `exclude`.
 * @param {string} dir the `agents/` directory
 * @param {Set<string>} exclude agent ids not to serve
 * @returns {Promise<Tool[]>}
 * @throws {Error} naming the file, for a manifest that is not an `mcp` agent or a `tool.mjs` without a default function
 */
export async function loadTools(dir, exclude) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const entries = (await readdir(dir, { withFileTypes: true })).filter((entry) => entry.isDirectory());
  entries.sort((a, b) => (a.name < b.name ? -1 : 1));
  const tools = [];
  for (const entry of entries) {
    const agentDir = join(dir, entry.name);
    if (!(await exists(join(agentDir, 'holon.yaml'))) || !(await exists(join(agentDir, 'tool.mjs')))) continue;
    const manifest = parse(await readFile(join(agentDir, 'holon.yaml'), 'utf8'));
    if (exclude.has(manifest.id)) continue;
    if (manifest.runtime?.kind !== 'mcp' || typeof manifest.runtime.tool !== 'string') {
      throw new Error(`${agentDir}/holon.yaml: the host serves mcp agents; runtime.kind is ${manifest.runtime?.kind}`);
    }
    const module = await import(pathToFileURL(join(agentDir, 'tool.mjs')).href);
    if (typeof module.default !== 'function') throw new Error(`${agentDir}/tool.mjs: no default export function run(input, ctx)`);
    const { input, output } = manifest.interface;
    tools.push({
      id: manifest.id,
      name: manifest.runtime.tool,
      description: manifest.summary,
      inputSchema: input,
      outputSchema: output,
      run: module.default,
      checkInput: ajv.compile(input),
      checkOutput: ajv.compile(output),
    });
  }
  const names = tools.map((tool) => tool.name);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice) throw new Error(`two agents declare the tool name ${twice}`);
  return tools;
}

async function exists(file) {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
