// acme/estimate: 1.5 hours per task; quotes 0.01 EUR per task, refusing up front above the caller's cap.
export default async function run(input, ctx) {
  const quote_cents = input.tasks.length;
  if (ctx.max_cost && Number(ctx.max_cost.amount) * 100 < quote_cents) {
    throw ctx.error('over_budget', `the quote ${quote_cents / 100} exceeds max_cost ${ctx.max_cost.amount}`);
  }
  ctx.quote((quote_cents / 100).toFixed(2));
  return { hours: input.tasks.length * 1.5 };
}
