-- Metadata a message carries from its enqueuer to its handlers and the dead
-- letters (W3C trace context today), as a JSON object; NULL for none.
ALTER TABLE {p}messages ADD COLUMN meta text;
ALTER TABLE {p}dead ADD COLUMN meta text;
