/**
 * The output schemas of the `/mcp` tools (MCP 2025-11-25, tools: `outputSchema`): the shape of the
 * `structuredContent` each tool returns, errors included (an MCP client validates structured
 * content whenever a tool declares a schema, `isError` or not). Nested objects name the fields
 * they always carry and allow more, so a field added to a receipt never breaks a client. Money is
 * a decimal string in the currency shown beside it (gateway §4).
 */
import { z } from 'zod';

/** A tool's refusal or a call's failure: a machine code and a sentence. */
const toolError = z.object({ code: z.string(), message: z.string() });

const money = z.string().describe('a decimal amount, e.g. "0.192"');

/** A receipt (gateway §4) with its downstream calls expanded in `calls`, recursively. */
const receiptTree = z.looseObject({
  id: z.string(),
  parent: z.string().nullable(),
  mandate: z.string(),
  agent: z.string().nullable(),
  status: z.string(),
  approval: z.string().nullable(),
  worst_case: money.nullable(),
  currency: z.string(),
  payer: z.string(),
  billed: z.boolean(),
  cost: z.object({ own: money, downstream: money, total: money }),
  splits: z.array(z.object({ to: z.string(), amount: money })),
  children: z.array(z.string()),
  error: toolError.nullable(),
  jws: z.string().describe("the receipt signed by the gateway (issue 23 §2), a compact JWS its /.well-known/jwks.json verifies"),
  get calls(): z.ZodArray<typeof receiptTree> {
    return z.array(receiptTree);
  },
});

/** An approval as `list_approvals` and a held call show it. */
const approval = z.looseObject({
  id: z.string(),
  status: z.enum(['pending', 'approved', 'rejected', 'expired']),
  mandate: z.string(),
  agent: z.string(),
  max_cost: money.nullable(),
  worst_case: money,
  currency: z.string(),
  reason: z.string(),
  receipt: z.string(),
});

/** A catalogue entry as `search_agents` ranks it. */
const listing = z.looseObject({
  id: z.string(),
  version: z.string(),
  summary: z.string(),
  capabilities: z.array(z.string()),
  price: z.record(z.string(), z.unknown()),
  worst_case: money.nullable(),
  currency: z.string(),
  success_rate: z.number().nullable(),
  cost_per_success: money.nullable(),
  allowed: z.enum(['allow', 'approve', 'deny']).nullable(),
  reason: z.string().nullable(),
  license: z.string(),
  proprietary: z.boolean(),
  published: z.boolean(),
});

/** `search_agents`: the session mandate and the ranked agents. */
export const searchAgentsOutput = { mandate: z.string(), agents: z.array(listing) };

/** `call_agent`: the receipt's status, then the output (succeeded), the error (failed, denied, rejected) or the approval (held), and the receipt tree. */
export const callAgentOutput = {
  status: z.string(),
  output: z.unknown().optional(),
  error: toolError.optional(),
  approval: approval.optional(),
  receipt: receiptTree,
};

/** `read_receipts`: one receipt tree (`receipt`), the newest ones (`receipts`), or an error. */
export const readReceiptsOutput = { receipt: receiptTree.optional(), receipts: z.array(receiptTree).optional(), error: toolError.optional() };

/** `list_approvals`: the pending approvals under the session mandate. */
export const listApprovalsOutput = { approvals: z.array(approval) };
