/**
 * The gateway of the gateway benchmark, as its own process (so its CPU is counted apart): a
 * `startDevGateway` on `DATABASE_URL` (gateway and in-process reference binding alike) with only the
 * benchmark's agent directory, no agents host. It then creates one payer, funded, and a mandate
 * it pays for, and prints one line of JSON: `{"url", "mandate"}`.
 *
 *   DATABASE_URL=postgres://... node --import tsx bench/gateway/gateway.ts <port> <agent_dir> <data_dir>
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { HttpClearingPort } from '../../src/gateway/clearing.ts';
import { storeMandate } from '../../src/gateway/mandates.ts';
import { startDevGateway } from '../../src/serve/dev.ts';

/** What the payer is funded with, in micro-units (1,000,000 EUR: far more than a run spends). */
const FUNDING_MICROS = 1_000_000_000_000;

const [portText, agentDir, dataDir] = process.argv.slice(2);
const port = Number(portText);
if (!Number.isInteger(port) || !agentDir || !dataDir) throw new Error('usage: gateway.ts <port> <agent_dir> <data_dir>');

const running = await startDevGateway({ port, db: dataDir, agent_dirs: [agentDir], exclude: [], mandate_dir: path.join(dataDir, 'mandates'), agents_host_port: null });
const payer = `bench-${randomBytes(4).toString('hex')}`;
const clearing = new HttpClearingPort(running.clearing_url);
await clearing.createAccount(payer);
await clearing.credit(`fund:${payer}`, payer, FUNDING_MICROS, 'gateway benchmark funding', true);
const document = {
  id: `${payer}/bench`,
  issuer: payer,
  grantee: `${payer}/bench`,
  allow: { agents: ['*'], capabilities: ['*'] },
  budget: { total: '100000.00', currency: 'EUR' },
};
await storeMandate(running.db.knex, document, { parent: null, payer });
console.log(JSON.stringify({ url: running.url, mandate: document.id }));
const stop = async () => {
  await running.close();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
