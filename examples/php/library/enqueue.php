<?php
// php enqueue.php FIRST LAST: places orders FIRST..LAST, each with its
// order_sync job in the order's own transaction. Every 7th order is declined
// (rolled back after its enqueue: its job never existed); every 4th is
// submitted twice (the second enqueue finds the key and returns the same job
// without harming the transaction). One JSON line per order.
declare(strict_types=1);
require __DIR__ . '/app.php';

$pdo = app_pdo();
$sluice = new Sluice\Client($pdo);
$orders = app_table('orders');
[, $first, $last] = $argv + [null, '1', '1'];
for ($id = (int) $first; $id <= (int) $last; $id++) {
    $pdo->beginTransaction();
    $pdo->prepare("INSERT INTO $orders (id) VALUES (?)")->execute([$id]);
    $job = $sluice->enqueue('order_sync', ['order_id' => $id], ['key' => "order:$id"]);
    if ($id % 4 === 0) {
        $again = $sluice->enqueue('order_sync', ['order_id' => $id], ['key' => "order:$id"]);
        if (!$again->duplicate || $again->id !== $job->id) {
            throw new LogicException("order $id: the second enqueue gave job $again->id, want $job->id as a duplicate");
        }
    }
    $pdo->prepare("UPDATE $orders SET job_id = ? WHERE id = ?")->execute([$job->id, $id]);
    if ($id % 7 === 0) {
        $pdo->rollBack();
        echo json_encode(['order' => $id, 'committed' => false]), "\n";
        continue;
    }
    $pdo->commit();
    echo json_encode(['order' => $id, 'job' => $job->id, 'committed' => true]), "\n";
}
