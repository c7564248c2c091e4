/**
 * Documents for the contract tests (gateway §2 manifests): one valid manifest, `acme/extract`
 * per_run 0.10 EUR over MCP, that each test bends by replacing top-level fields.
 */
import { validateManifest, type Manifest } from '../../src/contracts/manifest.ts';

/** A minimal valid manifest document, with top-level fields replaced by `over` (undefined removes one). */
export function manifestDocument(over: Record<string, unknown> = {}): Record<string, unknown> {
  const base: Record<string, unknown> = {
    id: 'acme/extract',
    version: '1.2.0',
    summary: 'Extracts tables',
    capabilities: ['extraction.table'],
    interface: { input: { type: 'object' }, output: { type: 'object' } },
    price: { model: 'per_run', amount: '0.10', currency: 'EUR' },
    runtime: { kind: 'mcp', endpoint: 'https://acme.example/mcp', tool: 'extract' },
    license: 'MIT',
  };
  return Object.fromEntries(Object.entries({ ...base, ...over }).filter(([, value]) => value !== undefined));
}

/** {@link manifestDocument} validated: a `Manifest` as the registry holds it. */
export function testManifest(over: Record<string, unknown> = {}): Manifest {
  return validateManifest(manifestDocument(over)).manifest;
}
