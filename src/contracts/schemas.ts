/**
 * The manifest and mandate JSON Schemas of `openapi/`, loaded once. They are the written spec of
 * both documents; the modules here validate against them and read shared patterns from them, so
 * no pattern is written twice in code.
 */
import { readFileSync } from 'node:fs';
import type { components } from '../../generated/gateway/types.ts';

function load(name: string): Record<string, any> {
  return JSON.parse(readFileSync(new URL(`../../openapi/${name}`, import.meta.url), 'utf8')) as Record<string, any>;
}

/** `openapi/manifest.schema.json` (JSON Schema 2020-12). */
export const manifestSchema = load('manifest.schema.json');

/** `openapi/mandate.schema.json` (JSON Schema 2020-12). */
export const mandateSchema = load('mandate.schema.json');

/** A manifest document as the API answers it (`Manifest` of `openapi/gateway.yaml`). */
export type ManifestDocument = components['schemas']['Manifest'];

/** A mandate document as the API answers it (`Mandate` of `openapi/gateway.yaml`). */
export type MandateDocument = components['schemas']['Mandate'];

/** A stored manifest, typed as the API answers it: as its author wrote it, and valid against {@link manifestSchema} (checked when it was loaded). */
export const manifestDocument = (document: Record<string, unknown>): ManifestDocument => document as ManifestDocument;

/** A stored mandate, typed as the API answers it: as its issuer wrote it, and valid against {@link mandateSchema} (checked when it was stored). */
export const mandateDocument = (document: Record<string, unknown>): MandateDocument => document as MandateDocument;

/** The pattern of an agent id `ns/name`, from the manifest schema's `id`. */
export const AGENT_ID = new RegExp(manifestSchema.properties.id.pattern as string);
