/**
 * The command line: `holon-conformance --config FILE [--only IDS] [--json FILE] [--junit FILE]`.
 * Exit 0 when every MUST check passed, 1 when one failed, 2 when the config is invalid or the
 * binding cannot be reached at start.
 */
import { writeFile } from 'node:fs/promises';
import { Command } from 'commander';
import pkg from '../package.json' with { type: 'json' };
import { ConfigError, loadConfig } from './config.ts';
import { toJunit } from './report/junit.ts';
import { formatProgress, formatReport } from './report/text.ts';
import { BindingUnreachable, runConformance } from './runner.ts';

/** Parses `argv`, runs the kit, writes the reports and answers the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const program = new Command()
    .name('holon-conformance')
    .version(pkg.version)
    .description('Certifies a clearing binding against the Holon clearing contract')
    .requiredOption('--config <file>', 'the config file (JSON): url, headers, access, fixtures')
    .option('--only <ids>', 'comma-separated check ids, section names or prefix* patterns')
    .option('--json <file>', 'also write the results as JSON')
    .option('--junit <file>', 'also write the results as JUnit XML')
    .exitOverride();
  try {
    program.parse(argv, { from: 'user' });
  } catch (error) {
    return (error as { exitCode?: number }).exitCode === 0 ? 0 : 2;
  }
  const opts = program.opts<{ config: string; only?: string; json?: string; junit?: string }>();
  try {
    const config = await loadConfig(opts.config);
    const only = opts.only?.split(',').map((s) => s.trim()).filter((s) => s !== '');
    const report = await runConformance(config, { only, onProgress: (e) => console.log(formatProgress(e)) });
    console.log(formatReport(report));
    if (opts.json !== undefined) await writeFile(opts.json, `${JSON.stringify(report, null, 2)}\n`);
    if (opts.junit !== undefined) await writeFile(opts.junit, toJunit(report));
    return report.exit_code;
  } catch (error) {
    if (error instanceof ConfigError || error instanceof BindingUnreachable) {
      console.error(`holon-conformance: ${error.message}`);
      return 2;
    }
    throw error;
  }
}

process.exitCode = await main(process.argv.slice(2));
