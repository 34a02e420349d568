<?php
// php setup.php: the app's tables (orders, and the keys of applied jobs).
declare(strict_types=1);
require __DIR__ . '/app.php';

$pdo = app_pdo();
$orders = app_table('orders');
$pdo->exec("CREATE TABLE IF NOT EXISTS $orders (id BIGINT PRIMARY KEY, job_id BIGINT NULL, status VARCHAR(16) NOT NULL DEFAULT 'new', sync_count INT NOT NULL DEFAULT 0)");
(new Sluice\Idempotency($pdo, app_table('applied')))->createTable();
