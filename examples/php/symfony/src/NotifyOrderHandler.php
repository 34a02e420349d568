<?php

declare(strict_types=1);

namespace App;

/**
 * A second handler of SyncOrder: sends the customer a notice, here a row
 * in {prefix}notices standing for a mail, an effect no database
 * transaction can hold (so no Sluice\Idempotency). When SyncOrderHandler
 * fails, the retry carries this handler's HandledStamp, as under Symfony's
 * worker, and does not send the notice again.
 */
final class NotifyOrderHandler
{
    public function __construct(private readonly \PDO $pdo, private readonly string $prefix)
    {
    }

    public function __invoke(SyncOrder $m): void
    {
        $this->pdo->prepare("INSERT INTO {$this->prefix}notices (order_id) VALUES (?)")->execute([$m->orderId]);
    }
}
