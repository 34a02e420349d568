<?php
// php enqueue.php FIRST LAST: each order and its SyncOrder message in one
// transaction; every 7th rolls back, every 4th is delayed two seconds.
declare(strict_types=1);
[$pdo, $bus, , $prefix] = require __DIR__ . '/bootstrap.php';

use App\SyncOrder;
use Symfony\Component\Messenger\Stamp\DelayStamp;

[, $first, $last] = $argv + [null, '1', '1'];
for ($id = (int) $first; $id <= (int) $last; $id++) {
    $pdo->beginTransaction();
    $pdo->prepare("INSERT INTO {$prefix}orders (id) VALUES (?)")->execute([$id]);
    $bus->dispatch(new SyncOrder($id), $id % 4 === 0 ? [new DelayStamp(2000)] : []);
    if ($id % 7 === 0) {
        $pdo->rollBack();
        echo json_encode(['order' => $id, 'committed' => false]), "\n";
        continue;
    }
    $pdo->commit();
    echo json_encode(['order' => $id, 'committed' => true]), "\n";
}
