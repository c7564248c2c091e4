/**
 * The clearing seam in the process of the reference binding (issue 12 §2): the gateway calls the
 * binding's own handlers on the binding's own ledger, so its writes join the same write path
 * (group commit) as the binding's HTTP door, without loopback HTTP. Requests have the shapes of
 * clearing-contract §6 and are checked against the contract's schemas like the HTTP door checks
 * them; answers and errors are those of {@link HttpClearingPort}: a §7 refusal (4xx) is
 * `ClearingRefused` with the same status, code and sentence, anything else (a 5xx such as
 * `overloaded`, a database failure, no answer within the request timeout) is
 * `ClearingUnreachable`. Amounts are integer micro-units of the binding's unit.
 */
import { operationTable, schemaDocument, type OperationId, type OperationRequest, type OperationResult } from '../../generated/clearing/server.ts';
import { clearingHandlers, type ClearingHandlers } from '../clearing/app.ts';
import type { Ledger } from '../clearing/ledger.ts';
import { HttpError } from '../http/errors.ts';
import { operationChecks, type OperationChecks } from '../http/mount.ts';
import { ClearingRefused, ClearingUnreachable, DEFAULT_CLEARING_TIMEOUTS, type ClearingPort, type ClearingTimeouts, type SettleBody } from './clearing.ts';

/** The seam on a binding running in this process: its handlers on `ledger`, each request bounded by `timeouts.request_s`. */
export class InProcessClearingPort implements ClearingPort {
  private readonly handlers: ClearingHandlers;
  private readonly checks: Map<string, OperationChecks>;
  private readonly request_ms: number;

  constructor(ledger: Ledger, timeouts: ClearingTimeouts = DEFAULT_CLEARING_TIMEOUTS) {
    this.handlers = clearingHandlers(ledger);
    this.checks = operationChecks(operationTable, schemaDocument);
    this.request_ms = timeouts.request_s * 1000;
  }

  /**
   * Runs operation `id` as the HTTP door would: path and body checked against the contract's
   * schemas, then the handler, bounded by the request timeout. Throws `ClearingRefused` for a
   * 4xx refusal, `ClearingUnreachable` for anything else; `what` names the request in both.
   */
  private async invoke<K extends OperationId>(what: string, id: K, params: Record<string, string>, body?: OperationRequest<K>['body']): Promise<OperationResult<K>> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.request_ms / 1000} s (the clearing request timeout, HOLON_CLEARING_TIMEOUT_S)`)), this.request_ms);
    });
    try {
      const check = this.checks.get(id)!;
      check.params(params);
      check.body(body);
      // No Koa context: the binding's handlers read only the request.
      return (await Promise.race([this.handlers[id]!({ params, query: {}, body }, undefined as never), timeout])) as OperationResult<K>;
    } catch (error) {
      if (error instanceof HttpError && error.status >= 400 && error.status < 500) throw new ClearingRefused(error.status, error.code, `the clearing binding refused ${what}: ${error.message}`);
      throw new ClearingUnreachable(`the clearing binding failed on ${what}: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  readBalance(account: string) {
    return this.invoke(`read-balance of ${account}`, 'read-balance', { account });
  }

  openHold(holdId: string, account: string, amount: number, expiresAt: Date, ref: string) {
    return this.invoke(`open-hold ${holdId}`, 'open-hold', {}, { holdId, account, amount, expiresAt: expiresAt.toISOString(), ref });
  }

  releaseHold(holdId: string, reason: string) {
    return this.invoke(`release-hold ${holdId}`, 'release-hold', {}, { holdId, reason });
  }

  settle(body: SettleBody) {
    return this.invoke(`settle ${body.txnId}`, 'settle', {}, body);
  }

  credit(txnId: string, account: string, amount: number, ref: string, simulated: boolean) {
    return this.invoke(`credit ${txnId}`, 'credit', {}, { txnId, account, amount, ref, simulated });
  }

  createAccount(account: string) {
    return this.invoke(`create-account ${account}`, 'create-account', {}, { account });
  }

  readCheckpoint() {
    return this.invoke('read-checkpoint', 'read-checkpoint', {});
  }
}
