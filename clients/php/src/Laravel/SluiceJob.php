<?php

declare(strict_types=1);

namespace Sluice\Laravel;

use Illuminate\Container\Container;
use Illuminate\Contracts\Queue\Job as JobContract;
use Illuminate\Queue\Jobs\Job;
use Sluice\Webhook\Delivery;

/**
 * One delivery of a Laravel job, run by WebhookController through Laravel's
 * own Worker::process(). Its payload is the verified Laravel payload (never
 * the delivery's raw one); its tries, backoff and retryUntil are the job
 * class's, read from that payload by Laravel's Job.
 */
final class SluiceJob extends Job implements JobContract
{
    private ?int $releaseDelay = null;
    private ?\Throwable $failure = null;

    /**
     * @param array<string,mixed> $payload Laravel's job payload, verified
     * @param int $attemptsBefore the delivery's attempts that are not this run's (before a `sluice jobs retry`)
     */
    public function __construct(
        Container $container,
        private readonly Delivery $delivery,
        private readonly array $payload,
        string $connectionName,
        private readonly int $attemptsBefore = 0,
        /** Reads whether an operator cancelled the job; null: never. */
        private readonly ?\Closure $cancelledCheck = null,
    ) {
        $this->container = $container;
        $this->connectionName = $connectionName;
        $this->queue = $payload['queue'] ?? null;
    }

    public function getJobId()
    {
        return $this->delivery->id;
    }

    public function getRawBody()
    {
        return json_encode($this->payload, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
    }

    public function payload()
    {
        return $this->payload;
    }

    /** sluice counts the attempts: the delivery's, since the last retry of a failed job. */
    public function attempts()
    {
        return max(1, $this->delivery->attempt - $this->attemptsBefore);
    }

    /** The answer tells sluice to run the job again after $delay seconds. */
    public function release($delay = 0)
    {
        parent::release($delay);
        $this->releaseDelay = (int) $delay;
    }

    /** Records why, for the answer's error ($this->fail($e) keeps its reason). */
    public function fail($e = null)
    {
        $this->failure ??= $e;
        parent::fail($e);
    }

    public function failure(): ?\Throwable
    {
        return $this->failure;
    }

    public function releaseDelay(): ?int
    {
        return $this->releaseDelay;
    }

    /**
     * Whether an operator cancelled the job while it runs (`sluice jobs
     * cancel`, the API, the dashboard), read from sluice's table on each
     * call. sluice aborts the webhook request, which PHP does not notice:
     * a long job asks this between its steps, as a batch's job asks
     * $this->batch()->cancelled(), and returns. failed() is not called for
     * a cancel, and whatever the job answers, it stays cancelled.
     */
    public function isCancelled(): bool
    {
        return $this->cancelledCheck !== null && ($this->cancelledCheck)();
    }

    public function delivery(): Delivery
    {
        return $this->delivery;
    }
}
