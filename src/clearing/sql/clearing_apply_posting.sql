-- Moves the posting's account balance, within the balance bound (issue 8 item 1.6): a posting that
-- would carry an account beyond ±3 000 000 000 000 000 micro-units (MAX_BALANCE_MICROS,
-- src/contracts/money.ts), or further beyond it, is refused (H1460). The bound lives in the
-- trigger every posting passes through, so it holds for every door.
--
-- A holder account's balance lives in its own row, which every write to it locks anyway: its bound
-- is one comparison. A machinery account (external:*, platform:*) is posted to by every settlement
-- (platform:fees) or every credit (external:funding): one balance row would serialize them all.
-- Its balance is split over 8 rows of clearing_machinery_balances ("stripes") instead; a posting
-- goes to the stripe its database session starts at (pg_backend_pid() % 8) and spills over the
-- next ones, in stripe order, only when that stripe is full. Each stripe stays within
-- 375 000 000 000 000 (the bound / 8), so the account's sum stays within the bound without reading
-- or locking the other stripes.
--
-- An account with no balance row is refused (H1404): the postings keep no foreign key to
-- clearing_accounts, whose check locked the one platform:fees row for every settle (why:
-- clearing_keep_journal_accounts.sql).
--
-- Created by migration 001 (no bound); this text since migration 015.
CREATE OR REPLACE FUNCTION clearing_apply_posting() RETURNS trigger LANGUAGE plpgsql AS $$
   DECLARE new_balance bigint; done boolean; left_over bigint; stripe_balance bigint; portion bigint;
   BEGIN
     IF NEW.account LIKE 'external:%' OR NEW.account LIKE 'platform:%' THEN
       -- Fast path: the session's own stripe takes the whole posting.
       UPDATE clearing_machinery_balances SET balance = balance + NEW.delta
        WHERE account = NEW.account AND stripe = pg_backend_pid() % 8
          AND (abs(balance + NEW.delta) <= 375000000000000 OR abs(balance + NEW.delta) <= abs(balance))
       RETURNING true INTO done;
       IF done THEN RETURN NULL; END IF;
       -- Spill-over: fill the stripes in stripe order; refused when they cannot take it all (the subtransaction undoes the rest).
       left_over := NEW.delta;
       FOR i IN 0..7 LOOP
         SELECT balance INTO stripe_balance FROM clearing_machinery_balances WHERE account = NEW.account AND stripe = i FOR UPDATE; IF NOT FOUND THEN RAISE EXCEPTION 'no such account' USING ERRCODE = 'H1404', DETAIL = jsonb_build_object('account', NEW.account)::text; END IF;
         portion := CASE WHEN left_over > 0 THEN least(left_over, greatest(375000000000000 - stripe_balance, 0))
                         ELSE greatest(left_over, least(-375000000000000 - stripe_balance, 0)) END;
         IF portion <> 0 THEN
           UPDATE clearing_machinery_balances SET balance = balance + portion WHERE account = NEW.account AND stripe = i;
           left_over := left_over - portion;
         END IF;
         EXIT WHEN left_over = 0;
       END LOOP;
       IF left_over <> 0 THEN
         RAISE EXCEPTION 'balance bound' USING ERRCODE = 'H1460', DETAIL = jsonb_build_object('account', NEW.account, 'delta', NEW.delta,
           'balance', (SELECT sum(balance) FROM clearing_machinery_balances WHERE account = NEW.account) - (NEW.delta - left_over),
           'bound', 3000000000000000)::text;
       END IF;
       RETURN NULL;
     END IF;
     UPDATE clearing_accounts SET balance = balance + NEW.delta WHERE id = NEW.account AND kind = 'holder' RETURNING balance INTO new_balance; IF NOT FOUND THEN RAISE EXCEPTION 'no such account' USING ERRCODE = 'H1404', DETAIL = jsonb_build_object('account', NEW.account)::text; END IF;
     IF abs(new_balance) > 3000000000000000 AND abs(new_balance) > abs(new_balance - NEW.delta) THEN
       RAISE EXCEPTION 'balance bound' USING ERRCODE = 'H1460', DETAIL = jsonb_build_object('account', NEW.account, 'delta', NEW.delta,
         'balance', new_balance - NEW.delta, 'bound', 3000000000000000)::text;
     END IF;
     RETURN NULL;
   END $$;

CREATE TRIGGER clearing_postings_apply AFTER INSERT ON clearing_postings
  FOR EACH ROW EXECUTE FUNCTION clearing_apply_posting();
