/** Faults injected into the database, for tests of what a failed write leaves behind. */
import type { Knex } from 'knex';

/**
 * Makes the first `timing` write to `table` whose row matches `condition` (SQL over NEW) fail, as
 * a write refused or cut off mid-call would. A sequence counts the matches: unlike a row, it is
 * not rolled back with the failed transaction, so the fault fires exactly once.
 */
export async function failOnce(db: Knex, name: string, timing: 'INSERT' | 'UPDATE', table: string, condition: string): Promise<void> {
  await db.raw(`CREATE SEQUENCE fault_${name}`);
  await db.raw(`CREATE FUNCTION fault_${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF (${condition}) AND nextval('fault_${name}') = 1 THEN RAISE EXCEPTION 'injected fault ${name}'; END IF;
      RETURN NEW;
    END $$`);
  await db.raw(`CREATE TRIGGER fault_${name} BEFORE ${timing} ON ${table} FOR EACH ROW EXECUTE FUNCTION fault_${name}()`);
}
