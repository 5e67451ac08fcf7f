-- The one-column CHECKs of review_items and review_decisions become domains (issue 15).
--
-- Why: for every statement that writes a table, PostgreSQL rebuilds each of the table's
-- CHECK constraints from its catalogue text (parse and plan the expression) and evaluates
-- all of them on every row written, whichever columns the statement changed. The claim and
-- the decision write review_items twice per cycle (12 CHECKs) and review_decisions once
-- (8). A domain's CHECK is parsed and planned once per connection (the type cache keeps
-- it) and runs only where a value is converted to the domain: on the columns a statement
-- assigns, and not at all when the value already has the domain (a column copied into a
-- column of the same domain).
--
-- The same rules, the same NULL behaviour: a domain CHECK that is NULL passes, as a table
-- CHECK does, and NOT NULL stays on the columns (none of these domains is NOT NULL). The
-- checks that involve two columns stay on their tables, and so does that of
-- review_items.assigned_to: the generated column `reserved` reads it, and PostgreSQL does
-- not change the type of a column a generated column uses. Nothing maps these constraints'
-- names to an error: the domain validates the input before it writes, and a violation
-- here is still a check_violation (asyncpg.CheckViolationError, kind "check") that now
-- names the domain's constraint. Clients read the columns as their base type, text.
-- USAGE on a type is granted to PUBLIC by default and no migration revokes it, so the
-- application role may use these.

CREATE DOMAIN sha256_hex AS text;
CREATE DOMAIN short_text AS text;
CREATE DOMAIN review_item_state AS text;
CREATE DOMAIN review_item_kind AS text;
CREATE DOMAIN decision_verdict AS text;
CREATE DOMAIN decision_outcome AS text;
CREATE DOMAIN note_text AS text;
CREATE DOMAIN traceparent_text AS text;

-- The domains take their CHECKs only after the columns have changed type: a change of
-- type to a domain without constraints is binary and keeps the table's rows (and the
-- indexes keyed on the columns; those whose predicate reads `state` are built again),
-- where a domain with a CHECK would rewrite the table. Adding the CHECK to the domain
-- then reads the rows once to validate them.
-- PostgreSQL does not change the type of a column a trigger's WHEN reads: the trigger
-- that records exception leases (0009) is dropped and created again, the same, around the
-- change of `kind`. All of it runs in the migration's one transaction.
DROP TRIGGER review_items_exception_lease ON review_items;
ALTER TABLE review_items
    DROP CONSTRAINT review_items_evidence_hash_check,
    DROP CONSTRAINT review_items_external_key_check,
    DROP CONSTRAINT review_items_state_check,
    DROP CONSTRAINT review_items_kind_check,
    ALTER COLUMN evidence_hash TYPE sha256_hex,
    ALTER COLUMN external_key TYPE short_text,
    ALTER COLUMN state TYPE review_item_state,
    ALTER COLUMN kind TYPE review_item_kind;
CREATE TRIGGER review_items_exception_lease
    AFTER UPDATE OF lease_token ON review_items
    FOR EACH ROW
    WHEN (NEW.kind = 'exception' AND NEW.lease_token IS NOT NULL
          AND NEW.lease_token IS DISTINCT FROM OLD.lease_token)
    EXECUTE FUNCTION exception_leases_record();

ALTER TABLE review_decisions
    DROP CONSTRAINT review_decisions_evidence_hash_check,
    DROP CONSTRAINT review_decisions_verdict_check,
    DROP CONSTRAINT review_decisions_outcome_check,
    DROP CONSTRAINT review_decisions_note_check,
    DROP CONSTRAINT review_decisions_traceparent_check,
    ALTER COLUMN evidence_hash TYPE sha256_hex,
    ALTER COLUMN verdict TYPE decision_verdict,
    ALTER COLUMN outcome TYPE decision_outcome,
    ALTER COLUMN note TYPE note_text,
    ALTER COLUMN traceparent TYPE traceparent_text;

-- The expressions are those of the dropped CHECKs, with VALUE for the column.
ALTER DOMAIN sha256_hex
    ADD CONSTRAINT sha256_hex_is_64_lowercase_hex_digits CHECK (VALUE ~ '^[0-9a-f]{64}$');
ALTER DOMAIN short_text
    ADD CONSTRAINT short_text_is_1_to_200_characters CHECK (length(VALUE) BETWEEN 1 AND 200);
ALTER DOMAIN review_item_state
    ADD CONSTRAINT review_item_state_is_known CHECK (VALUE IN ('pending', 'decided', 'parked'));
ALTER DOMAIN review_item_kind
    ADD CONSTRAINT review_item_kind_is_known CHECK (VALUE IN ('review', 'exception'));
ALTER DOMAIN decision_verdict
    ADD CONSTRAINT decision_verdict_is_known
        CHECK (VALUE IN ('approve', 'reject', 'escalate', 'overturn'));
ALTER DOMAIN decision_outcome
    ADD CONSTRAINT decision_outcome_is_known CHECK (VALUE IN ('approve', 'reject', 'escalate'));
ALTER DOMAIN note_text
    ADD CONSTRAINT note_text_is_at_most_4000_characters CHECK (length(VALUE) <= 4000);
ALTER DOMAIN traceparent_text
    ADD CONSTRAINT traceparent_text_is_at_most_100_characters CHECK (length(VALUE) <= 100);
