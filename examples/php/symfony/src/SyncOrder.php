<?php

declare(strict_types=1);

namespace App;

final class SyncOrder
{
    public function __construct(public readonly int $orderId)
    {
    }
}
