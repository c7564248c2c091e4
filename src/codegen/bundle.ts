/**
 * Inlines the JSON Schema files an OpenAPI document references from `components.schemas`
 * (`Manifest: {$ref: ./manifest.schema.json}`), so every generator and ajv see one
 * self-contained document. The file's `$defs` become components of their own, prefixed with the
 * component's name (`Manifest_decimal`), and its `#/$defs/x` references point at them (the
 * client generator cannot follow a reference into a nested `$defs`); `$schema` and `$id` are
 * dropped, since the document itself is the resource.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

type Json = Record<string, any>;

function reanchor(node: unknown, owner: string): unknown {
  if (Array.isArray(node)) return node.map((item) => reanchor(item, owner));
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node).map(([key, value]) => [
      key,
      key === '$ref' && typeof value === 'string' && value.startsWith('#/$defs/')
        ? `#/components/schemas/${owner}_${value.slice('#/$defs/'.length)}`
        : reanchor(value, owner),
    ]),
  );
}

/** Returns `document` with every file-referencing component schema replaced by the file's content. */
export async function bundleSchemas(document: Json, baseDir: string): Promise<Json> {
  const schemas: Json = { ...(document.components?.schemas ?? {}) };
  for (const [name, schema] of Object.entries<Json>(schemas)) {
    if (typeof schema.$ref !== 'string' || schema.$ref.startsWith('#')) continue;
    const { $schema: _schema, $id: _id, $defs = {}, ...content } = JSON.parse(await readFile(path.join(baseDir, schema.$ref), 'utf8'));
    schemas[name] = reanchor(content, name);
    for (const [def, definition] of Object.entries($defs)) schemas[`${name}_${def}`] = reanchor(definition, name);
  }
  return { ...document, components: { ...document.components, schemas } };
}
