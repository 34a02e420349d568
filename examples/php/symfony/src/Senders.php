<?php

declare(strict_types=1);

namespace App;

use Psr\Container\ContainerInterface;

/** The senders by name, as the framework's container would give them. */
final class Senders implements ContainerInterface
{
    public function __construct(private readonly array $senders)
    {
    }

    public function get(string $id): mixed
    {
        return $this->senders[$id] ?? throw new \OutOfBoundsException("no sender $id");
    }

    public function has(string $id): bool
    {
        return isset($this->senders[$id]);
    }
}
