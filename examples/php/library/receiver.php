<?php
// The order_sync endpoint, for PHP-FPM or `php -S 127.0.0.1:9000 receiver.php`.
// A bad signature is a 401 (the job fails: that request was not sluice's);
// each job is applied once, its Idempotency-Key recorded in the same
// transaction as the order's update. The first attempt of every 5th order
// answers "busy" (503, Retry-After: 1) to show a retry.
declare(strict_types=1);
require __DIR__ . '/app.php';

use Sluice\Webhook\Receiver;
use Sluice\Webhook\Reply;
use Sluice\Webhook\SignatureException;

try {
    $job = (new Receiver(explode(',', getenv('HOOK_SECRET') ?: '')))->receiveGlobals();
} catch (SignatureException $e) {
    Reply::unauthorized($e->getMessage())->send();
    return;
} catch (UnexpectedValueException $e) {
    Reply::fail($e->getMessage())->send();
    return;
}
$order = $job->payload['order_id'] ?? null;
if (!is_int($order)) {
    Reply::fail('payload.order_id: want an integer')->send();
    return;
}
if ($job->attempt === 1 && $order % 5 === 1) {
    Reply::retry('busy, try again', 1)->send();
    return;
}
$pdo = app_pdo();
$orders = app_table('orders');
try {
    $applied = (new Sluice\Idempotency($pdo, app_table('applied')))->once($job, function (PDO $pdo) use ($orders, $order) {
        $st = $pdo->prepare("UPDATE $orders SET status = 'synced', sync_count = sync_count + 1 WHERE id = ?");
        $st->execute([$order]);
        if ($st->rowCount() !== 1) {
            throw new DomainException("order $order does not exist");
        }
    });
} catch (DomainException $e) {
    Reply::fail($e->getMessage())->send(); // 422: no attempt left will find the order
    return;
}
Reply::done(['order' => $order, 'already_applied' => !$applied])->send();
