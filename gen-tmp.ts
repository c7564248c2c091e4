import { writeFileSync } from 'node:fs';
import { settleOp } from './src/clearing/settlements.ts';
const [tag, calls, out, per] = process.argv.slice(2);
const size = Number(per ?? 16);
let n = 0;
const call = () => JSON.stringify(Array.from({ length: size }, (_, i) => settleOp({ txnId: `${tag}-${++n}`, caller: `c${i}`, owner: `o${i}`, rate: 90, retail: 100 } as any)));
writeFileSync(out, Array.from({ length: Number(calls) }, () => `SELECT clearing_apply('${call().replaceAll("'", "''")}'::jsonb);`).join('\n') + '\n');
