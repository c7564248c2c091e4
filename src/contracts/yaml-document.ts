/**
 * Reading a document written in YAML (`holon.yaml`, a mandate file) into plain JSON values.
 */
import { parse as parseYaml } from 'yaml';
import { ContractError } from './errors.ts';

/**
 * Parses YAML 1.2 with the core schema (no dates, no custom tags; JSON is a subset), refusing
 * duplicate keys. Throws ContractError `code` with `label: <parser message with line and column>`.
 */
export function parseYamlDocument(text: string, code: 'invalid_manifest' | 'invalid_mandate', label: string): unknown {
  try {
    return parseYaml(text, { schema: 'core', uniqueKeys: true });
  } catch (error) {
    throw new ContractError(code, `${label}: ${(error as Error).message}`);
  }
}
