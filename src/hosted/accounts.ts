/**
 * Accounts (gateway §7 "Accounts", "The journal"): sign-up and demo credit. Money enters only
 * through the clearing seam, from `external:demo-credit`: sign-up credit under the transaction
 * id `signup:<handle>`, operator top-ups under `admin-credit:<id>`, so the same movement can
 * never be recorded twice. The account's rows and its credit commit together: the credit is
 * posted inside the transaction that writes the account, and a refusal rolls the account back.
 */
import type { Knex } from 'knex';
import { formatMoney, parseMoney, type Micros } from '../contracts/money.ts';
import { ContractError } from '../contracts/errors.ts';
import { HttpError } from '../http/errors.ts';
import { ClearingRefused, ClearingUnreachable, type ClearingPort } from '../gateway/clearing.ts';
import { storeMandate } from '../gateway/mandates.ts';
import { mintKey, type NewKey } from './keys.ts';
import { normalizeHandle, refuseReserved } from './handles.ts';

/** Largest single admin credit: 1,000.00 EUR in micro-units. */
export const MAX_ADMIN_CREDIT_MICROS = 1_000_000_000;

/** A new account: its keys (shown once), its starter mandate and the credit it got. */
export interface SignupResult {
  handle: string;
  human_key: NewKey;
  agent_key: NewKey;
  mandate: string;
  credit: string;
}

/** What sign-up needs from the composition. */
export interface AccountDeps {
  db: Knex;
  clearing: ClearingPort;
  signup_credit_micros: Micros;
  /** Rates the platform sets on hosted mandates (`budget.fx`). */
  fx: Record<string, string>;
  /** Every agent author's namespace in the registry, refused as a handle. */
  authorNamespaces: () => ReadonlySet<string>;
}

/** Maps a clearing failure to the API's answer: 503 when the binding cannot be reached, 502 `clearing_refused` otherwise. */
export function clearingFailure(error: unknown): never {
  if (error instanceof ClearingUnreachable) throw new HttpError(503, 'clearing_unavailable', `${error.message}; nothing was created, try again`);
  if (error instanceof ClearingRefused) throw new HttpError(502, 'clearing_refused', `${error.message}; nothing was created`);
  throw error;
}

/** Posts a demo credit through the seam: makes sure the account exists, then credits it from `external:demo-credit`. */
async function demoCredit(clearing: ClearingPort, txn_id: string, account: string, amount_micros: Micros, ref: string): Promise<void> {
  try {
    await clearing.createAccount(account);
    if (amount_micros > 0) await clearing.credit(txn_id, account, amount_micros, ref, true);
  } catch (error) {
    clearingFailure(error);
  }
}

/** The starter mandate `<handle>/sandbox`: every agent, 5.00 EUR by default, approval above 0.50, two levels of delegation. */
export function sandboxMandate(handle: string, total_micros: Micros, fx: Record<string, string>): Record<string, unknown> {
  return {
    id: `${handle}/sandbox`,
    issuer: handle,
    grantee: `${handle}/assistant`,
    allow: { agents: ['*'], capabilities: ['*'] },
    approval: { above: '0.50' },
    budget: { total: formatMoney(total_micros), currency: 'EUR', fx },
    delegation: { max_depth: 2 },
  };
}

/**
 * Creates an account (the account row, its starter mandate, a human key that does not expire,
 * an `ask_in_client` agent key) and its sign-up credit, in one transaction. Throws 422
 * `invalid_request` / `handle_reserved`, 409 `handle_taken` / `email_taken`, 403 `email_disabled`, 503/502 when the
 * credit cannot be posted (then nothing is kept).
 */
export async function signUp(deps: AccountDeps, request: { handle: string; email: string }): Promise<SignupResult> {
  const handle = normalizeHandle(request.handle);
  refuseReserved(handle, deps.authorNamespaces());
  const email = request.email.toLowerCase();
  return deps.db.transaction(async (trx) => {
    await createAccountRows(trx, deps, { handle, email, github: null });
    const human_key = await mintKey(trx, { kind: 'human', account: handle, mandate: null, ask_in_client: false, ttl_ms: null });
    const agent_key = await mintKey(trx, { kind: 'agent', account: handle, mandate: `${handle}/sandbox`, ask_in_client: true, ttl_ms: null });
    await demoCredit(deps.clearing, `signup:${handle}`, handle, deps.signup_credit_micros, `sign-up credit of ${handle}`);
    return { handle, human_key, agent_key, mandate: `${handle}/sandbox`, credit: formatMoney(deps.signup_credit_micros) };
  });
}

/**
 * Writes an account's row and starter mandate inside `trx`. Throws 409 `handle_taken` when the
 * handle is an account or a mandate namespace already, `email_taken` when the email is, 403
 * `email_disabled` when the email is a disabled account's.
 */
export async function createAccountRows(
  trx: Knex.Transaction,
  deps: Pick<AccountDeps, 'signup_credit_micros' | 'fx'>,
  account: { handle: string; email: string | null; github: { id: number; login: string } | null },
): Promise<void> {
  const { handle, email } = account;
  if (await trx('hosted_accounts').where({ handle }).first('handle')) throw new HttpError(409, 'handle_taken', `the handle "${handle}" is taken: choose another`);
  if (await trx('gateway_mandates').where('id', 'like', `${handle}/%`).first('id')) throw new HttpError(409, 'handle_taken', `the handle "${handle}" is taken: choose another`);
  const holder = email === null ? undefined : await trx('hosted_accounts').where({ email }).first('disabled_at');
  // A disabled account keeps its email, so that email never gets a way back in (gateway §7 "Moderation").
  if (holder && holder.disabled_at !== null) throw new HttpError(403, 'email_disabled', `the email ${email} belongs to a disabled account: it cannot sign up again`);
  if (holder) throw new HttpError(409, 'email_taken', `an account with the email ${email} exists: sign in with GitHub to link it`);
  await trx('hosted_accounts').insert({
    handle,
    email,
    github_id: account.github?.id ?? null,
    github_login: account.github?.login ?? null,
    signup_credit_micros: deps.signup_credit_micros,
  });
  await storeMandate(trx, sandboxMandate(handle, deps.signup_credit_micros, deps.fx), { parent: null, payer: handle });
}

/** Posts the sign-up credit of `handle` (idempotent under `signup:<handle>`), for accounts made outside {@link signUp}. */
export function creditSignup(deps: Pick<AccountDeps, 'clearing' | 'signup_credit_micros'>, handle: string): Promise<void> {
  return demoCredit(deps.clearing, `signup:${handle}`, handle, deps.signup_credit_micros, `sign-up credit of ${handle}`);
}

/**
 * The amount of an operator top-up (the decimal string `amount` of `POST /v0/admin/credit`) in
 * micro-units: more than 0 and at most {@link MAX_ADMIN_CREDIT_MICROS}, at most 6 decimals. Throws
 * 422 `invalid_request` naming that bound for anything else: 0, a sign ("-1.00", "-0"), an
 * exponent, more decimals, a number of any length ("999999999999").
 */
export function creditAmount(text: string): Micros {
  let amount_micros: Micros | null = null;
  try {
    amount_micros = parseMoney(text, 'amount');
  } catch (error) {
    if (!(error instanceof ContractError)) throw error;
  }
  if (amount_micros === null || amount_micros <= 0 || amount_micros > MAX_ADMIN_CREDIT_MICROS) {
    throw new HttpError(422, 'invalid_request', `invalid request: amount must be a decimal string more than 0 and at most ${formatMoney(MAX_ADMIN_CREDIT_MICROS)} with at most 6 decimals, such as "2.50"; ${JSON.stringify(text)} is not`);
  }
  return amount_micros;
}

/**
 * The operator's top-up (`POST /v0/admin/credit`) of `amount` (a decimal string, {@link creditAmount}):
 * a row `ac<n>` and the credit `admin-credit:ac<n>` commit together. Throws 422
 * `invalid_request` for an amount outside its bound (before anything is read), 404 `no_such_account`.
 */
export async function adminCredit(deps: Pick<AccountDeps, 'db' | 'clearing'>, account: string, amount: string): Promise<{ id: string; account: string; amount: string }> {
  const amount_micros = creditAmount(amount);
  return deps.db.transaction(async (trx) => {
    if (!(await trx('hosted_accounts').where({ handle: account }).first('handle'))) throw new HttpError(404, 'no_such_account', `there is no account ${account}`);
    const seq = await trx.raw(`SELECT nextval('hosted_admin_credit_seq') AS n`);
    const id = `ac${seq.rows[0].n}`;
    await trx('hosted_admin_credits').insert({ id, account, amount_micros });
    await demoCredit(deps.clearing, `admin-credit:${id}`, account, amount_micros, `operator credit ${id}`);
    return { id, account, amount: formatMoney(amount_micros) };
  });
}

/** Maps a mandate the contract refuses to 422 `invalid_mandate`. */
export function mandateRefused(error: unknown): never {
  if (error instanceof ContractError) throw new HttpError(422, 'invalid_mandate', error.message);
  throw error;
}
