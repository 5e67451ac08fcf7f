-- Reason codes that need a note (issue 14): a decision or an overturn giving such a code is
-- refused unless it says, in its own words, why.

ALTER TABLE reason_codes ADD COLUMN requires_note boolean NOT NULL DEFAULT false;

-- Whether a note says anything: present and not only whitespace. The fences of
-- decision_submit and decision_overturn and their diagnoses ask it of the same note, so the
-- refusal they write and the reason the domain gives cannot disagree. LANGUAGE sql with one
-- expression: the planner inlines it.
CREATE FUNCTION casework_has_text(note text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(note ~ '[^[:space:]]', false)
$$;

REVOKE ALL ON FUNCTION casework_has_text(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION casework_has_text(text) TO casework_app;
