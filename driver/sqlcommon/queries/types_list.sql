-- Every job type's settings that plain-SQL enqueues take (see SyncTypes).
SELECT type, queue, max_attempts, dedupe FROM sluice_types
