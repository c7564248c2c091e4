/**
 * The Holon reference binding (`src/clearing/`) served for the kit's own tests, with the kit's
 * fixtures created through its own doors. Only tests import `src/`; the kit never does.
 */
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createClearingApp } from '../../src/clearing/app.ts';
import type { REQUIRED_OPERATIONS } from '../../src/clearing/capabilities.ts';
import type { MutualTls } from '../../src/clearing/tls.ts';
import type { Database } from '../../src/db/index.ts';
import { testBinding, unique } from '../../tests/helpers/clearing.ts';

/** A served reference binding: its base URL and how to stop it. */
export interface ServedBinding {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Serves the reference binding over `db` on a free loopback port, offering `operations` (default
 * all); with `tls`, over https behind mutual TLS (issue 23 §4), as `holon clearing serve` does.
 */
export async function serveReference(db: Database, operations?: typeof REQUIRED_OPERATIONS, tls?: MutualTls): Promise<ServedBinding> {
  const app = createClearingApp({ db: db.knex, operations, gate: tls ? 'mutual-tls' : 'loopback' });
  const server = tls
    ? createHttpsServer({ ...tls, requestCert: true, rejectUnauthorized: false }, app.callback()).listen(0, '127.0.0.1')
    : app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * Creates the kit's fixture accounts (the payer funded with `prefunded_micros` when positive) and
 * agent link through the binding's own doors; answers the config's `fixtures`.
 */
export async function referenceFixtures(db: Database, prefunded_micros: number) {
  const binding = testBinding(db);
  const payer = prefunded_micros > 0 ? await binding.funded(prefunded_micros, 'conf-payer') : await binding.account('conf-payer');
  const payee = await binding.account('conf-payee');
  const agent_key = unique('conf-agent');
  await binding.http.post('/internal/reference/agent-links').send({ agentKey: agent_key, account: payer }).expect(200);
  return { agent_key, unknown_agent_key: unique('conf-nobody'), accounts: { payer, payee }, prefunded: prefunded_micros };
}
