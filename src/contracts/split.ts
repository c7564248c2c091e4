/**
 * The split of a paid call's amount: platform fee, creator share, royalties up the lineage
 * (gateway §2 "Split", §7 "The journal"; DESIGN "Money", open points 2 and 10).
 *
 * amount ─► 10% platform fee, rounded down ─► the rest is level 0's revenue ─► each level pays
 * `royalty` of its revenue, rounded down, to the next level, whose revenue it is. Every micro-unit
 * of the amount lands in exactly one account. Each call in a delegation tree is split on its own,
 * so each pays its own rounded-down fee.
 */
import type { LineageLevel } from './lineage.ts';
import { divFloor, toMicros, type Micros } from './money.ts';

/** The platform's account, which receives the fee. */
export const PLATFORM_ACCOUNT = 'holon';

/** The platform fee, in percent of the amount, rounded down to the micro-unit. */
export const PLATFORM_FEE_PERCENT = 10n;

/**
 * One level's share: `revenue_micros` what reached it (after the fee for level 0, the royalty
 * received otherwise), `royalty_micros` what it pays to the next level, `kept_micros` the rest.
 */
export interface SplitLevel {
  agent: string;
  account: string;
  revenue_micros: Micros;
  royalty_micros: Micros;
  kept_micros: Micros;
}

/** A split: `platform_fee_micros` plus every level's `kept_micros` is exactly `amount_micros`. */
export interface Split {
  amount_micros: Micros;
  platform_fee_micros: Micros;
  levels: SplitLevel[];
}

/**
 * Splits `amount_micros` (a non-negative safe integer) along `chain` (from `lineageChain`, at
 * least the called agent). Example (gateway §7): 35000 with a 15% fork: fee 3500, fork 26775,
 * upstream 4725. Throws RangeError on a negative amount, or a chain that is empty or whose last
 * level pays a royalty to nobody (bugs, not inputs).
 */
export function splitCharge(amount_micros: Micros, chain: readonly LineageLevel[]): Split {
  if (!Number.isSafeInteger(amount_micros) || amount_micros < 0) throw new RangeError(`splitCharge: ${amount_micros} is not a non-negative amount of micro-units`);
  if (chain.length === 0 || chain[chain.length - 1].royalty_ppm !== 0) {
    throw new RangeError('splitCharge: the chain must end with a level that pays no royalty');
  }
  const amount = BigInt(amount_micros);
  const fee = divFloor(amount * PLATFORM_FEE_PERCENT, 100n);
  let revenue = amount - fee;
  const levels = chain.map((level) => {
    const royalty = divFloor(revenue * BigInt(level.royalty_ppm), 1_000_000n);
    const entry: SplitLevel = {
      agent: level.agent,
      account: level.account,
      revenue_micros: toMicros(revenue),
      royalty_micros: toMicros(royalty),
      kept_micros: toMicros(revenue - royalty),
    };
    revenue = royalty;
    return entry;
  });
  return { amount_micros, platform_fee_micros: toMicros(fee), levels };
}

/**
 * The credit lines of a split, one per account (the platform first, then in chain order; an
 * account at several levels gets one line with the sum), leaving out zero amounts: the receipt's
 * `splits` and the credit side of the §7 journal entry (the payer's debit is −amount).
 */
export function splitLines(split: Split): Array<{ to: string; amount_micros: Micros }> {
  const totals = new Map<string, number>([[PLATFORM_ACCOUNT, split.platform_fee_micros]]);
  for (const level of split.levels) totals.set(level.account, (totals.get(level.account) ?? 0) + level.kept_micros);
  return [...totals].filter(([, amount]) => amount > 0).map(([to, amount_micros]) => ({ to, amount_micros }));
}
