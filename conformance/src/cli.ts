#!/usr/bin/env node
/**
 * The command line: `holon-conformance --config FILE [--only IDS] [--json FILE] [--junit FILE]`
 * runs the kit; `holon-conformance init [FILE]` writes a commented config. Exit 0 when every
 * MUST check passed, 1 when one failed, 2 when the command line or the config is invalid, the
 * binding cannot be reached, or what answers is not a clearing binding.
 */
import { writeFile } from 'node:fs/promises';
import { ConfigError, loadConfig } from './config.ts';
import { writeConfigTemplate } from './init.ts';
import { exploreOptions } from './explore/flags.ts';
import { runExplore } from './explore/run.ts';
import { kitProgram, type ExploreFlags, type RunFlags } from './program.ts';
import { toJunit } from './report/junit.ts';
import { formatProgress, formatReport } from './report/text.ts';
import { BindingUnreachable, NotABinding, runConformance } from './runner.ts';

/** Parses `argv`, runs the command it names and answers the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let exitCode = 0;
  const program = kitProgram({
    run: async (flags) => {
      exitCode = await run(flags);
    },
    explore: async (flags) => {
      exitCode = await explore(flags);
    },
    init: async (file, flags) => {
      exitCode = await guarded(async () => {
        await writeConfigTemplate(file, flags.force === true);
        console.log(`wrote ${file}: edit url and fixtures, then run  npx holon-conformance --config ${file}`);
        return 0;
      });
    },
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    return (error as { exitCode?: number }).exitCode === 0 ? 0 : 2;
  }
  return exitCode;
}

/** Runs the kit with the parsed options and writes the reports; answers the exit code. */
function run(flags: RunFlags): Promise<number> {
  return guarded(async () => {
    if (flags.config === undefined) throw new ConfigError(`--config <file> is required (write one with: holon-conformance init); see --help`);
    const config = await loadConfig(flags.config, { cert: flags.cert, key: flags.key, ca: flags.ca });
    const only = flags.only?.split(',').map((s) => s.trim()).filter((s) => s !== '');
    const report = await runConformance(config, { only, onProgress: (e) => console.log(formatProgress(e)) });
    console.log(formatReport(report));
    if (flags.json !== undefined) await writeFile(flags.json, `${JSON.stringify(report, null, 2)}\n`);
    if (flags.junit !== undefined) await writeFile(flags.junit, toJunit(report));
    return report.exit_code;
  });
}

/** Runs explore mode with the parsed options and writes the reports; answers the exit code. */
function explore(flags: ExploreFlags): Promise<number> {
  return guarded(async () => {
    if (flags.config === undefined) throw new ConfigError(`--config <file> is required (write one with: holon-conformance init); see explore --help`);
    const config = await loadConfig(flags.config, { cert: flags.cert, key: flags.key, ca: flags.ca });
    const report = await runExplore(config, { ...exploreOptions(flags), onProgress: (line) => console.log(line) });
    console.log(formatReport(report));
    console.log(`seed ${report.explore.seed}: ${report.explore.histories} histories, ${report.explore.requests} requests; replay with: ${report.explore.replay} --config ${flags.config}`);
    if (flags.json !== undefined) await writeFile(flags.json, `${JSON.stringify(report, null, 2)}\n`);
    if (flags.junit !== undefined) await writeFile(flags.junit, toJunit(report));
    return report.exit_code;
  });
}

/** Runs `body`; a problem the user must fix before a run can mean anything is one line on stderr and exit 2. */
async function guarded(body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof ConfigError || error instanceof BindingUnreachable || error instanceof NotABinding) {
      console.error(`holon-conformance: ${error.message}`);
      return 2;
    }
    throw error;
  }
}

// A reader that stopped early (`holon-conformance --help | head`) is not an error of the run.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(process.exitCode ?? 0);
});
process.exitCode = await main(process.argv.slice(2));
