<?php

declare(strict_types=1);

namespace App;

use Sluice\Idempotency;
use Sluice\Symfony\CurrentDelivery;
use Symfony\Component\Messenger\Exception\UnrecoverableMessageHandlingException;

/** Marks the order synced, once per sluice job. */
final class SyncOrderHandler
{
    public function __construct(private readonly \PDO $pdo, private readonly CurrentDelivery $delivery, private readonly string $prefix)
    {
    }

    public function __invoke(SyncOrder $m): void
    {
        $d = $this->delivery->get();
        if ($d->attempt === 1 && $m->orderId % 5 === 1) {
            throw new \RuntimeException('partner busy'); // sluice retries with its backoff
        }
        (new Idempotency($this->pdo, $this->prefix . 'applied'))->once($d, function (\PDO $pdo) use ($m) {
            $st = $pdo->prepare("UPDATE {$this->prefix}orders SET status = 'synced', sync_count = sync_count + 1 WHERE id = ?");
            $st->execute([$m->orderId]);
            if ($st->rowCount() !== 1) {
                // No retry can find it: the job fails now, not after its attempts.
                throw new UnrecoverableMessageHandlingException("order {$m->orderId} does not exist");
            }
        });
    }
}
