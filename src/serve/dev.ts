/**
 * `holon serve`: the dev gateway (gateway §5, §6 "Dev runtime"), the shared start (`gateway.ts`)
 * with the one part it plugs in: the dev account `dev`, its demo credit, and the mandates of
 * `examples/mandates/`, so a first call needs no set-up.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Database } from '../db/index.ts';
import { storeMandate } from '../gateway/mandates.ts';
import { startGateway, type GatewayPlugin, type GatewayServerOptions, type RunningGateway } from './gateway.ts';

/** The dev account that pays for calls under the example mandates. */
export const DEV_ACCOUNT = 'dev';

/** Demo credit given once to the dev account: 100 EUR in micro-units. */
export const DEV_CREDIT_MICROS = 100_000_000;

/** Options of {@link startDevGateway}: the shared ones, and where the example mandates are. */
export interface DevGatewayOptions extends GatewayServerOptions {
  /** Directory of example mandates (default `examples/mandates`). */
  mandate_dir?: string;
}

/** Loads every `*.yaml` mandate of `dir` (issued by the dev account), replacing what was stored under the same id. */
async function loadExampleMandates(database: Database, dir: string): Promise<void> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  } catch {
    return;
  }
  for (const file of files) {
    const document = parseYaml(await readFile(path.join(dir, file), 'utf8'), { schema: 'core', uniqueKeys: true });
    try {
      await storeMandate(database.knex, document, { parent: null, payer: document.issuer, replace: true });
    } catch (error) {
      throw new Error(`${path.join(dir, file)}: ${(error as Error).message}`);
    }
  }
}

/**
 * What the dev gateway plugs in: the example mandates of `mandate_dir` (stored before the lease,
 * replacing what was stored under the same ids), the account {@link DEV_ACCOUNT} and its demo
 * credit of {@link DEV_CREDIT_MICROS}, given once (`demo-credit:dev`, simulated money).
 */
export function devPlugin(mandate_dir: string): GatewayPlugin {
  return {
    prepare: (database) => loadExampleMandates(database, mandate_dir),
    accounts: [DEV_ACCOUNT],
    credits: [{ txn_id: 'demo-credit:dev', account: DEV_ACCOUNT, amount_micros: DEV_CREDIT_MICROS, ref: 'dev gateway demo credit', simulated: true }],
  };
}

/** Starts the dev gateway; resolves once it listens (see `startGateway` for what it starts and how a failure is cleaned up). */
export async function startDevGateway(options: DevGatewayOptions): Promise<RunningGateway> {
  return startGateway(options, [devPlugin(options.mandate_dir ?? path.join('examples', 'mandates'))]);
}
