/**
 * MCP 2025-11-25 sessions in the database (issue 27 §1, migration 018), so any gateway process
 * serves any request of a session: the row says who opened it and what its client declared at
 * `initialize`; a client's answer to an elicitation waits in `mcp_answers` for the process that
 * asked, whichever process the balancer handed the answer to.
 */
import type { Knex } from 'knex';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';

/** At most this many MCP 2025-11-25 sessions at once, over all processes; a new client beyond it is asked to retry. */
export const MAX_SESSIONS = 256;

/** A session without a request for this long is deleted (the client initializes again). */
export const SESSION_IDLE_MS = 30 * 60_000;

/** At most this many answers of one session wait to be claimed; more are refused. */
export const MAX_WAITING_ANSWERS = 16;

/** An answer nobody claimed within this long is deleted (the request it answered has timed out). */
export const ANSWER_TTL_MS = 10 * 60_000;

/** A stored session. */
export interface McpSessionRow {
  id: string;
  owner: string;
  client_capabilities: ClientCapabilities;
}

const jsonOf = <T>(value: unknown): T => (typeof value === 'string' ? JSON.parse(value) : value) as T;

/**
 * Deletes idle sessions (and their answers) and stale answers, then opens session `id` unless
 * {@link MAX_SESSIONS} are open; answers whether it was opened.
 */
export async function openSession(db: Knex, row: McpSessionRow): Promise<boolean> {
  await db('mcp_sessions').where('seen_at', '<', new Date(Date.now() - SESSION_IDLE_MS)).delete();
  await db('mcp_answers').where('created_at', '<', new Date(Date.now() - ANSWER_TTL_MS)).delete();
  const [{ count }] = await db('mcp_sessions').count({ count: '*' });
  if (Number(count) >= MAX_SESSIONS) return false;
  await db('mcp_sessions').insert({ id: row.id, owner: row.owner, client_capabilities: JSON.stringify(row.client_capabilities) });
  return true;
}

/** How many sessions are open (used within {@link SESSION_IDLE_MS}), over all processes: `holon_mcp_sessions_open`. */
export async function countOpenSessions(db: Knex): Promise<number> {
  const [{ count }] = await db('mcp_sessions').where('seen_at', '>=', new Date(Date.now() - SESSION_IDLE_MS)).count({ count: '*' });
  return Number(count);
}

/** Session `id` of `owner`, marked used now; null when absent, idle past {@link SESSION_IDLE_MS} or another owner's (they read the same). */
export async function touchSession(db: Knex, id: string, owner: string): Promise<McpSessionRow | null> {
  const [row] = await db('mcp_sessions')
    .where({ id, owner })
    .where('seen_at', '>=', new Date(Date.now() - SESSION_IDLE_MS))
    .update({ seen_at: db.fn.now() })
    .returning(['id', 'owner', 'client_capabilities']);
  return row ? { id: row.id, owner: row.owner, client_capabilities: jsonOf<ClientCapabilities>(row.client_capabilities) } : null;
}

/** Ends session `id` (the client's DELETE); its waiting answers go with it. */
export async function closeSession(db: Knex, id: string): Promise<void> {
  await db('mcp_sessions').where({ id }).delete();
}

/**
 * Keeps a client's answer (a JSON-RPC response) to request `request_id` of session `session_id`
 * for the process that asked. Answers false when {@link MAX_WAITING_ANSWERS} already wait; a
 * repeated answer to the same request keeps the first.
 */
export async function depositAnswer(db: Knex, session_id: string, request_id: string, message: unknown): Promise<boolean> {
  const [{ count }] = await db('mcp_answers').where({ session_id }).count({ count: '*' });
  if (Number(count) >= MAX_WAITING_ANSWERS) return false;
  await db('mcp_answers').insert({ session_id, request_id, message: JSON.stringify(message) }).onConflict(['session_id', 'request_id']).ignore();
  return true;
}

/** Takes (reads and deletes) the answers to `request_ids` of session `session_id` that have arrived. */
export async function claimAnswers(db: Knex, session_id: string, request_ids: readonly string[]): Promise<unknown[]> {
  if (request_ids.length === 0) return [];
  const rows = await db('mcp_answers').where({ session_id }).whereIn('request_id', request_ids).delete().returning('message');
  return rows.map((row: { message: unknown }) => jsonOf(row.message));
}
