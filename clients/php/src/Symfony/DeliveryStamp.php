<?php

declare(strict_types=1);

namespace Sluice\Symfony;

use Sluice\Webhook\Delivery;
use Symfony\Component\Messenger\Stamp\NonSendableStampInterface;

/**
 * The sluice delivery a message came with: handlers read its
 * idempotencyKey (Sluice\Idempotency) and attempt from
 * $envelope->last(DeliveryStamp::class).
 */
final class DeliveryStamp implements NonSendableStampInterface
{
    public function __construct(public readonly Delivery $delivery)
    {
    }
}
