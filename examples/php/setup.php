<?php
// Creates the app's own tables. sluice's tables come from
// `sluice --config sluice.yaml migrate`.
//
//     APP_DB=mysql://root@127.0.0.1:3306/shop php setup.php
declare(strict_types=1);
require __DIR__ . '/db.php';

one_line_errors();

$pdo = app_pdo();
// sync_count counts how often the sync was applied: the point of the
// example is that it ends at 1 for every order, however often sluice
// delivers the job.
$pdo->exec(<<<'SQL'
CREATE TABLE IF NOT EXISTS orders (
  id           BIGINT      NOT NULL PRIMARY KEY,
  customer     VARCHAR(64) NOT NULL,
  amount_cents INT         NOT NULL,
  status       VARCHAR(16) NOT NULL DEFAULT 'new',
  job_id       BIGINT      NULL,
  sync_count   INT         NOT NULL DEFAULT 0,
  synced_at    DATETIME(6) NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4
SQL);
// One row per Idempotency-Key applied, written in the same transaction as
// the effect: the primary key is what makes a second delivery a no-op.
$pdo->exec(<<<'SQL'
CREATE TABLE IF NOT EXISTS applied (
  idempotency_key VARCHAR(191) NOT NULL PRIMARY KEY,
  job_id          BIGINT       NOT NULL,
  attempt         INT          NOT NULL,
  redeliveries    INT          NOT NULL DEFAULT 0,
  applied_at      DATETIME(6)  NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4
SQL);
echo "app tables ready\n";
