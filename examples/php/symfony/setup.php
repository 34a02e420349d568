<?php
declare(strict_types=1);
[$pdo, , , $prefix] = require __DIR__ . '/bootstrap.php';

$pdo->exec("CREATE TABLE {$prefix}orders (id BIGINT PRIMARY KEY, status VARCHAR(16) NOT NULL DEFAULT 'new', sync_count INT NOT NULL DEFAULT 0)");
$pdo->exec("CREATE TABLE {$prefix}notices (order_id BIGINT NOT NULL)");
(new Sluice\Idempotency($pdo, $prefix . 'applied'))->createTable();
