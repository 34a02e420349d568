<?php

declare(strict_types=1);

namespace Sluice\Laravel;

use Illuminate\Container\Container;
use Illuminate\Contracts\Queue\Job as JobContract;
use Illuminate\Queue\Jobs\Job;
use Sluice\Webhook\Delivery;

/** One delivery of a Laravel job, run by WebhookController. */
final class SluiceJob extends Job implements JobContract
{
    public function __construct(Container $container, private readonly Delivery $delivery, string $connectionName)
    {
        $this->container = $container;
        $this->connectionName = $connectionName;
        $this->queue = $delivery->payload['queue'] ?? null;
    }

    public function getJobId()
    {
        return $this->delivery->id;
    }

    public function getRawBody()
    {
        return json_encode($this->delivery->payload, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
    }

    public function payload()
    {
        return $this->delivery->payload;
    }

    /** sluice counts the attempts; this is the delivery's. */
    public function attempts()
    {
        return $this->delivery->attempt;
    }

    public function maxTries()
    {
        return $this->delivery->maxAttempts;
    }

    private int $releaseDelay = 0;

    /** The answer tells sluice to run the job again after $delay seconds. */
    public function release($delay = 0)
    {
        parent::release($delay);
        $this->releaseDelay = (int) $delay;
    }

    public function releaseDelay(): int
    {
        return $this->releaseDelay;
    }

    public function delivery(): Delivery
    {
        return $this->delivery;
    }
}
