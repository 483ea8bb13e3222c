-- Metadata a message carries from its enqueuer to its handlers and the dead
-- letters (W3C trace context today), as a JSON object; NULL for none.
ALTER TABLE {p}messages ADD COLUMN meta TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL;
ALTER TABLE {p}dead ADD COLUMN meta TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL;
