/**
 * The readable report: a progress line per section while the run goes, then a table of outcomes
 * by section, then every failure in full (with a curl line that reproduces it) and every warning.
 */
import { SECTIONS, type CheckResult } from '../check.ts';
import { CONTRACT_VERSION } from '../contract.ts';
import { curlFor, describeExchange } from '../http.ts';
import type { ConformanceReport, ProgressEvent } from '../runner.ts';

/** One line (or block, for the start) describing a progress event. */
export function formatProgress(event: ProgressEvent): string {
  if (event.kind === 'start') {
    return [`holon-conformance → ${event.url}, checking clearing-contract version ${CONTRACT_VERSION} (identifiers prefixed ${event.run_prefix})`, ...event.notes, ''].join('\n');
  }
  const counts = tally(event.results);
  const parts = [`${counts.pass} passed`];
  if (counts.fail > 0) parts.push(`${counts.fail} FAILED`);
  if (counts.skip > 0) parts.push(`${counts.skip} skipped`);
  if (counts.warn > 0) parts.push(`${counts.warn} warned`);
  const index = `[${String(event.index).padStart(2)}/${event.of}]`;
  return `${index} ${event.section.padEnd(13)} ${event.cites.padEnd(24)} ${parts.join(', ').padEnd(44)} ${(event.duration_ms / 1000).toFixed(1)} s`;
}

/** The full report after the run: table, failures, warnings, verdict. */
export function formatReport(report: ConformanceReport): string {
  const out: string[] = ['', table(report.results), ''];
  const failures = report.results.filter((r) => r.outcome === 'fail');
  for (const result of failures) out.push(formatFailure(result), '');
  const warnings = report.results.filter((r) => r.outcome === 'warn');
  for (const result of warnings) out.push(`WARNING  ${result.id}  ${result.level}  ${result.cite}\n  rule:   ${result.title}\n  proved nothing: ${result.reason}`, '');
  if (report.notes.length > 0) out.push(...report.notes.map((n) => `note: ${n}`), '');
  const t = report.totals;
  const contract = `${report.contract.name} version ${report.contract.version}`;
  const verdict = report.exit_code === 0 ? `PASS: every MUST check of ${contract} passed` : `FAIL: ${t.failed_must} MUST check${t.failed_must === 1 ? '' : 's'} of ${contract} failed`;
  out.push(`${verdict} (${t.passed} passed, ${t.failed} failed of which ${t.failed_should} SHOULD, ${t.skipped} skipped, ${t.warned} warned; ${(report.duration_ms / 1000).toFixed(1)} s)`);
  return out.join('\n');
}

/** One failure in full: the rule, what went wrong, expected and got, the exchanges that show it and their curl lines, then every request of the check as a curl line, in the order sent. */
export function formatFailure(result: CheckResult): string {
  const f = result.failure;
  const lines = [
    `FAILED  ${result.id}  ${result.level}  ${result.cite}`,
    `  rule:     ${result.title}`,
    `  problem:  ${f?.message ?? ''}`,
    `  expected: ${f?.expected ?? ''}`,
    `  got:      ${f?.got ?? ''}`,
  ];
  for (const exchange of f?.exchanges ?? []) {
    lines.push(indent(describeExchange(exchange), 4), `    reproduce: ${curlFor(exchange)}`);
  }
  if (f?.steps !== undefined) {
    lines.push(`  the shortest history that fails, ${f.requests_sent} requests in ${f.steps.length} steps; requests of one step were sent together:`);
    let n = 0;
    for (const [i, step] of f.steps.entries()) {
      const mark = step.length > 1 ? `  # step ${i + 1}: ${step.length} requests sent together` : `  # step ${i + 1}`;
      lines.push(`  ${mark}`);
      for (const exchange of step) lines.push(`    ${(n += 1)}. ${curlFor(exchange)}${step.length > 1 ? ' &' : ''}`);
      if (step.length > 1) lines.push('    wait');
    }
    return lines.join('\n');
  }
  if (f && f.requests.length > 0) {
    const shown = f.requests.length < f.requests_sent ? `the first ${f.requests.length} of ${f.requests_sent}` : `${f.requests_sent}`;
    lines.push(`  every request of the check, in the order sent (${shown}); run them in this order to rebuild the case:`);
    for (const exchange of f.requests) lines.push(`    ${exchange.seq}. ${curlFor(exchange)}`);
  }
  return lines.join('\n');
}

/** Outcome counts by section, with a total row. */
function table(results: readonly CheckResult[]): string {
  const rows = [['section', 'passed', 'failed', 'skipped', 'warned']];
  for (const { name } of SECTIONS) {
    const mine = results.filter((r) => r.section === name);
    if (mine.length === 0) continue;
    const c = tally(mine);
    rows.push([name, c.pass, c.fail, c.skip, c.warn].map(String));
  }
  const all = tally(results);
  rows.push(['total', all.pass, all.fail, all.skip, all.warn].map(String));
  return rows.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(14) : cell.padStart(8))).join('')).join('\n');
}

function tally(results: readonly CheckResult[]): Record<CheckResult['outcome'], number> {
  const counts = { pass: 0, fail: 0, skip: 0, warn: 0 };
  for (const r of results) counts[r.outcome] += 1;
  return counts;
}

function indent(text: string, spaces: number): string {
  return text.split('\n').map((line) => ' '.repeat(spaces) + line).join('\n');
}
