-- Placeholder on branch j49-deps for migration 002 of the limits branch
-- (issue 49): a merge takes that branch's file instead of this one.
SELECT 1;
