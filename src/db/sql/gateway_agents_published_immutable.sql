-- A published agent version is immutable and its number is never freed (src/hosted/publish.ts):
-- it can never be deleted, and the only change allowed is a yank (listed to false), so a caller who
-- pinned ns/name@x.y.z always gets what was published under it.
--
-- Created by migration 011; unchanged since.
CREATE OR REPLACE FUNCTION gateway_agents_published_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'DELETE' THEN
       RAISE EXCEPTION 'published version %@% can never be deleted: its number is never freed', OLD.id, OLD.version;
     END IF;
     IF NEW.id <> OLD.id OR NEW.version <> OLD.version OR NEW.manifest::text <> OLD.manifest::text
        OR NEW.source <> OLD.source OR NOT NEW.published OR (NEW.listed AND NOT OLD.listed) THEN
       RAISE EXCEPTION 'published version %@% is immutable: only a yank (listed to false) may change it', OLD.id, OLD.version;
     END IF;
     RETURN NEW;
   END $$;

CREATE TRIGGER gateway_agents_published_immutable BEFORE UPDATE OR DELETE ON gateway_agents
  FOR EACH ROW WHEN (OLD.published) EXECUTE FUNCTION gateway_agents_published_immutable();
