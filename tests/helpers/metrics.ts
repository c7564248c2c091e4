/**
 * Scraping `/metrics` in tests with a real Prometheus text parser (`parse-prometheus-text-format`),
 * and reading one sample's value from what it parsed.
 */
import assert from 'node:assert/strict';
import type TestAgent from 'supertest/lib/agent.js';
// The package ships no types: its families are typed below.
// @ts-expect-error no declaration file
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

/** One sample: its value and labels (a histogram's are `<name>_count`, `<name>_sum`, `<name>_bucket` samples). */
export interface Sample {
  labels?: Record<string, string>;
  value: string;
}

/** A metric family as the parser answers it. */
export interface Family {
  name: string;
  help: string;
  type: 'COUNTER' | 'GAUGE' | 'SUMMARY' | 'UNTYPED';
  metrics: Sample[];
}

/** Families by name. */
export type Scrape = Map<string, Family>;

/**
 * Parses a Prometheus text exposition. The parser folds a histogram's samples into one,
 * dropping their labels, so a histogram's `TYPE` line is left out first: its `_bucket`,
 * `_count` and `_sum` samples are then untyped families of their own, with their labels.
 */
export function parseExposition(text: string): Scrape {
  const families = parsePrometheusTextFormat(text.replace(/^# TYPE \S+ histogram\n/gm, '')) as Family[];
  // Untyped, a histogram's series alternate (`_bucket`, `_sum`, `_count` per label set): each run is a family, merged here by name.
  const byName: Scrape = new Map();
  for (const family of families) {
    const known = byName.get(family.name);
    if (known) known.metrics.push(...family.metrics);
    else byName.set(family.name, family);
  }
  return byName;
}

/** `GET /metrics` through `http` (200, Prometheus text), parsed. */
export async function scrape(http: TestAgent): Promise<Scrape> {
  const response = await http.get('/metrics').expect(200);
  assert.match(response.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  return parseExposition(response.text);
}

/**
 * The sum of the values of family `name`'s samples whose labels include `labels`; 0 when none
 * match, or when the family is absent (a histogram or a labelled counter has no sample before its first event).
 */
export function sampled(scraped: Scrape, name: string, labels: Record<string, string> = {}): number {
  return (scraped.get(name)?.metrics ?? [])
    .filter((sample) => Object.entries(labels).every(([label, value]) => sample.labels?.[label] === value))
    .reduce((sum, sample) => sum + Number(sample.value), 0);
}
