/**
 * The JUnit XML report, for CI: one test suite per section, one test case per check. A failed
 * check is a `<failure>` typed MUST or SHOULD whose body is the full failure text with its curl
 * lines (the exit code decides on MUST alone); a skipped
 * or warned check is `<skipped>`, with the reason in system-out.
 */
import { createRequire } from 'node:module';
import type { Builder } from 'junit-report-builder';
import { SECTIONS } from '../check.ts';
import type { ConformanceReport } from '../runner.ts';
import { formatFailure } from './text.ts';

/** junit-report-builder is CommonJS: module.exports is the builder its types call the default export. */
const junit = createRequire(import.meta.url)('junit-report-builder') as Builder;

/** Renders the report as JUnit XML. */
export function toJunit(report: ConformanceReport): string {
  const builder = junit.newBuilder().name(`holon-conformance ${report.url}: ${report.contract.name} version ${report.contract.version}`);
  for (const { name, cites } of SECTIONS) {
    const results = report.results.filter((r) => r.section === name);
    if (results.length === 0) continue;
    const suite = builder.testSuite().name(`${name} (${cites})`);
    for (const r of results) {
      const test = suite.testCase().className(`holon-conformance.${name}`).name(`${r.id} [${r.level}] ${r.title}`).time(r.duration_ms / 1000);
      if (r.outcome === 'fail') test.failure(r.failure?.message, r.level).stacktrace(formatFailure(r));
      if (r.outcome === 'skip') test.skipped().standardOutput(`skipped: ${r.reason}`);
      if (r.outcome === 'warn') test.skipped().standardOutput(`WARNING, proved nothing: ${r.reason}`);
    }
  }
  return builder.build();
}
