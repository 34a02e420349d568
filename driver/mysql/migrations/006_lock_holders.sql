-- Holders of the MySQL lock backend (package lock). The server knows a
-- named lock's holder only as a connection id, so each holder records its
-- name here, stamped with that id; only the holder of the named lock ever
-- writes its row, which makes the row's count of acquisitions the lock's
-- fence. Older versions created this table when the lock backend opened;
-- IF NOT EXISTS keeps such a table, whose shape is the same.
CREATE TABLE IF NOT EXISTS sluice_lock_holders (
  name    VARCHAR(191) NOT NULL,
  holder  VARCHAR(191) NOT NULL,
  session BIGINT       NOT NULL,
  fence   BIGINT       NOT NULL,
  since   DATETIME(6)  NOT NULL,
  PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
