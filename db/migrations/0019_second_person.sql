-- A second person (issue 16): some items may not be claimed by one named person.
--
-- A decision that needs a second review waits in a second-review queue, and a decision
-- sampled for QA is copied into a QA queue. In both, the person who made the decision may
-- not take the item: four-eyes means two different people. The item names that person in
-- `barred_claimer`, and item_claim_next passes over an item whose barred claimer is the
-- caller (on both of its probes: the caller's own assignments and the general walk), so the
-- rule holds in the database, whatever a console offers. Every other item has NULL here,
-- and the claim's condition on NULL is true for everyone.
ALTER TABLE review_items ADD COLUMN barred_claimer short_text;
