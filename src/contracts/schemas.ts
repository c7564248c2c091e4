/**
 * The manifest and mandate JSON Schemas of `openapi/`, loaded once. They are the written spec of
 * both documents; the modules here validate against them and read shared patterns from them, so
 * no pattern is written twice in code.
 */
import { readFileSync } from 'node:fs';

function load(name: string): Record<string, any> {
  return JSON.parse(readFileSync(new URL(`../../openapi/${name}`, import.meta.url), 'utf8')) as Record<string, any>;
}

/** `openapi/manifest.schema.json` (JSON Schema 2020-12). */
export const manifestSchema = load('manifest.schema.json');

/** `openapi/mandate.schema.json` (JSON Schema 2020-12). */
export const mandateSchema = load('mandate.schema.json');

/** The pattern of an agent id `ns/name`, from the manifest schema's `id`. */
export const AGENT_ID = new RegExp(manifestSchema.properties.id.pattern as string);
