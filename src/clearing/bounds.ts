/**
 * How the reference binding keeps the balance bound (`MAX_BALANCE_MICROS`, issue 8 item 1.6) on
 * its machinery accounts (`external:*`, `platform:*`) without a hot row. A holder account's
 * balance lives in its own row, which every write to it locks anyway, so its bound is one
 * comparison. A machinery account is posted to by every settlement (`platform:fees`) or every
 * credit (`external:funding`): one balance row would serialize them all. Its balance is split
 * over MACHINERY_STRIPES rows instead; a posting goes to the stripe its database session starts
 * at, and spills over the next ones (in stripe order) only when that stripe is full. Each stripe
 * stays within MACHINERY_STRIPE_MAX_MICROS, so the account's sum stays within the bound without
 * reading or locking the other stripes. The trigger is in `migrations/005_clearing_write_path.ts`.
 */
import { MAX_BALANCE_MICROS } from '../contracts/money.ts';

/** Rows a machinery account's balance is split over (one per concurrently writing session, up to this many). */
export const MACHINERY_STRIPES = 8;

/** The bound of one stripe, in micro-units: MAX_BALANCE_MICROS / MACHINERY_STRIPES (an integer). */
export const MACHINERY_STRIPE_MAX_MICROS = MAX_BALANCE_MICROS / MACHINERY_STRIPES;
