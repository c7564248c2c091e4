/**
 * Who may call each operation of `openapi/gateway.yaml` on a hosted gateway: the §7 principals
 * table as data. Typed by the generated `OperationId`, so an endpoint added to the document
 * without a row here fails the typecheck, and the authorization matrix test
 * (`tests/hosted/authorization.test.ts`) walks the same generated table.
 */
import type { OperationId } from '../../generated/gateway/server.ts';
import type { PrincipalKind } from './principal.ts';

const anyone = ['none', 'human', 'agent', 'admin'] as const;

/** The principal kinds each operation is open to (gateway §7 "Principals", "Extra endpoints"). */
export const OPERATION_PRINCIPALS: Readonly<Record<OperationId, readonly PrincipalKind[]>> = {
  health: anyone,
  // The keys that verify what the gateway signs: public (issue 23 §1).
  'read-jwks': anyone,
  'search-agents': anyone,
  'read-agent': anyone,
  // Calling: under the caller's own mandates; never the operator (§7 "Limits").
  call: ['human', 'agent'],
  'list-approvals': ['human', 'agent'],
  'read-approval': ['human', 'agent'],
  // Deciding: the issuer's human key only.
  'decide-approval': ['human'],
  'list-receipts': ['human', 'agent'],
  'read-receipt': ['human', 'agent'],
  'read-mandate': ['human', 'agent'],
  // Balances: a human sees its own, the operator every one.
  'list-accounts': ['human', 'admin'],
  'list-settlements': ['admin'],
  signup: anyone,
  'github-signin': anyone,
  'github-callback': anyone,
  'github-exchange': anyone,
  'read-me': ['human', 'agent'],
  'list-mandates': ['human'],
  'create-mandate': ['human'],
  'create-key': ['human'],
  'revoke-key': ['human'],
  'admin-credit': ['admin'],
  // Publishing, earnings (the author's human key) and moderation (the operator), gateway §7.
  'publish-agent': ['human'],
  'yank-agent': ['human'],
  'my-agents': ['human'],
  'admin-list-accounts': ['admin'],
  'admin-disable-account': ['admin'],
  'admin-yank-agent': ['admin'],
  'admin-log': ['admin'],
  'read-journal-checkpoint': ['admin'],
  // Endpoint credentials and drafts: the namespace owner's human key (another account's namespace is 404).
  'set-credential': ['human'],
  'delete-credential': ['human'],
  'draft-agent': ['human'],
  // Files (§7 "Files"): uploaded by the caller's keys; downloaded through a signed link, no key.
  'upload-file': ['human', 'agent'],
  'download-file': anyone,
  // The catalogue and the demo: anyone, no key needed (§7 "Principals": none reads the catalogue).
  'read-catalog': anyone,
  // What the operator switched on: anyone, so the signed-out console knows whether to offer GitHub sign-in.
  'read-features': anyone,
  'try-demo': anyone,
};
