<?php

declare(strict_types=1);

namespace Sluice\Symfony;

use Sluice\Webhook\Delivery;

/**
 * The sluice delivery being handled, for handlers (which get only the
 * message) that apply it once with Sluice\Idempotency: share one instance
 * between WebhookController and the handlers (a service).
 */
final class CurrentDelivery
{
    private ?Delivery $delivery = null;

    public function get(): Delivery
    {
        return $this->delivery ?? throw new \LogicException('no sluice delivery is being handled');
    }

    /** @internal WebhookController sets it around the dispatch. */
    public function set(?Delivery $d): void
    {
        $this->delivery = $d;
    }
}
