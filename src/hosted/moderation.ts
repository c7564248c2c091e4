/**
 * Moderation (gateway §7 "Moderation"), the operator's (admin key) four operations: disable an
 * account (every key revoked at once, its email can never sign up or sign in again, and with
 * `yank_agents` its listed versions withdrawn), yank any published version, list accounts, read
 * the log. Every action and its reason is one row of `hosted_moderation_log`, written in the
 * action's own transaction; the database refuses any UPDATE or DELETE of that log. Agents shipped
 * with the gateway are not moderated: they change with the code.
 */
import type { Knex } from 'knex';
import { iso } from '../db/index.ts';
import { HttpError } from '../http/errors.ts';
import type { Registry } from '../gateway/registry.ts';
import { yankInTransaction, type PublicationView } from './publish.ts';

/** What moderation needs. */
export interface ModerationDeps {
  db: Knex;
  registry: Registry;
}

/** One entry of the moderation log. */
export interface LogEntry {
  id: number;
  action: 'disable_account' | 'yank_agent';
  target: string;
  reason: string;
  detail: Record<string, unknown>;
  created_at: string;
}

/** Appends one entry to the log inside `trx`. */
async function logAction(trx: Knex.Transaction, action: LogEntry['action'], target: string, reason: string, detail: Record<string, unknown>): Promise<void> {
  await trx('hosted_moderation_log').insert({ action, target, reason, detail: JSON.stringify(detail) });
}

/**
 * Disables account `handle`: every key revoked, sign-in and sign-up with its email or GitHub
 * account refused from now on, and with `yank_agents` each listed published version yanked, all
 * in one transaction with its log entry. Throws 404 `no_such_account`, 409 `account_disabled`.
 */
export async function disableAccount(deps: ModerationDeps, handle: string, reason: string, yank_agents: boolean) {
  const { revoked, yanked } = await deps.db.transaction(async (trx) => {
    const account = await trx('hosted_accounts').where({ handle }).forUpdate().first('disabled_at');
    if (!account) throw new HttpError(404, 'no_such_account', `there is no account ${handle}`);
    if (account.disabled_at !== null) throw new HttpError(409, 'account_disabled', `${handle} was disabled already (${iso(account.disabled_at)})`);
    await trx('hosted_accounts').where({ handle }).update({ disabled_at: trx.fn.now() });
    const revoked = await trx('hosted_keys').where({ account: handle }).whereNull('revoked_at').update({ revoked_at: trx.fn.now() }).returning('prefix');
    const yanked: PublicationView[] = [];
    if (yank_agents) {
      const listed = await trx('hosted_publications').where({ account: handle }).whereNull('yanked_at').orderBy(['id', 'version']).select('id', 'version');
      for (const row of listed) yanked.push(await yankInTransaction(trx, row.id, row.version, { by: 'operator' }, reason));
    }
    await logAction(trx, 'disable_account', handle, reason, { keys_revoked: revoked.length, yanked: yanked.map((p) => p.agent) });
    return { revoked: revoked.length, yanked };
  });
  for (const publication of yanked) deps.registry.unlist(publication.id, publication.version);
  return { handle, disabled: true as const, keys_revoked: revoked, yanked: yanked.map((p) => p.agent) };
}

/** The operator's yank of `id@version`, logged with its reason. Throws what {@link yankInTransaction} throws. */
export async function yankByOperator(deps: ModerationDeps, id: string, version: string, reason: string): Promise<PublicationView> {
  const yanked = await deps.db.transaction(async (trx) => {
    const publication = await yankInTransaction(trx, id, version, { by: 'operator' }, reason);
    await logAction(trx, 'yank_agent', publication.agent, reason, {});
    return publication;
  });
  deps.registry.unlist(id, version);
  return yanked;
}

/** Accounts whose handle, email or GitHub login contains `q` (case-insensitive), by handle, at most `limit`. */
export async function listAccounts(db: Knex, q: string | undefined, limit: number) {
  let query = db('hosted_accounts as a').orderBy('a.handle').limit(limit);
  if (q) {
    // The pattern's own wildcards are escaped: `q` is text to find, not a pattern.
    const like = `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query = query.where((w) => w.whereRaw('lower(a.handle) LIKE ?', [like]).orWhereRaw('lower(a.email) LIKE ?', [like]).orWhereRaw('lower(a.github_login) LIKE ?', [like]));
  }
  const rows = await query.select(
    'a.handle',
    'a.email',
    'a.github_login',
    'a.disabled_at',
    'a.created_at',
    db('hosted_publications as p').whereRaw('p.account = a.handle').whereNull('p.yanked_at').count('*').as('listed_versions'),
  );
  return rows.map((row) => ({
    handle: row.handle as string,
    email: row.email as string | null,
    github_login: row.github_login as string | null,
    disabled: row.disabled_at !== null,
    disabled_at: iso(row.disabled_at),
    created_at: iso(row.created_at)!,
    listed_versions: Number(row.listed_versions),
  }));
}

/** The moderation log, newest first, at most `limit` entries, those before entry `before` when given. */
export async function readLog(db: Knex, limit: number, before?: number): Promise<LogEntry[]> {
  let query = db('hosted_moderation_log').orderBy('id', 'desc').limit(limit);
  if (before !== undefined) query = query.where('id', '<', before);
  const rows = await query.select();
  return rows.map((row) => ({
    id: Number(row.id),
    action: row.action,
    target: row.target,
    reason: row.reason,
    detail: typeof row.detail === 'string' ? JSON.parse(row.detail) : row.detail,
    created_at: iso(row.created_at)!,
  }));
}
