<?php

declare(strict_types=1);

namespace Sluice\Laravel;

use Illuminate\Contracts\Queue\Queue as QueueContract;
use Illuminate\Contracts\Queue\ShouldBeUnique;
use Illuminate\Database\Connection;
use Illuminate\Queue\Queue;
use Sluice\Client;

/**
 * Laravel's queue contract on sluice: push() and later() write a sluice job
 * of one type (default "laravel") with Laravel's own job payload, on the
 * app's database connection and so inside its open transaction; sluice
 * delivers it to WebhookController, which runs the job class in PHP-FPM. No
 * queue:work: pop() is not how jobs reach PHP here.
 *
 * The Laravel queue name becomes the sluice queue, ShouldBeUnique jobs get
 * a business key (laravel-unique:<class>:<uniqueId>, active dedupe: unique
 * while pending or running), $tries and --tries-like settings become
 * max_attempts, and delays become the job's run time.
 */
final class SluiceQueue extends Queue implements QueueContract
{
    private readonly Client $client;
    private readonly string $table;

    public function __construct(
        private readonly Connection $db,
        private readonly string $type,
        private readonly string $default,
        ?string $prefix,
        ?bool $dispatchAfterCommit,
    ) {
        $this->client = new Client($db->getPdo(), $prefix === null ? [] : ['prefix' => $prefix]);
        $this->table = $this->client->table();
        $this->dispatchAfterCommit = $dispatchAfterCommit ?? false;
    }

    public function size($queue = null)
    {
        // getPdo(), not the query builder: the connection's own table prefix is the app's, not sluice's.
        $st = $this->db->getPdo()->prepare("SELECT COUNT(*) FROM {$this->table} WHERE queue = ? AND status = 'pending'");
        $st->execute([$this->getQueue($queue)]);
        return (int) $st->fetchColumn();
    }

    public function push($job, $data = '', $queue = null)
    {
        return $this->enqueueUsing($job, $this->createPayload($job, $this->getQueue($queue), $data), $queue, null,
            fn ($payload, $queue) => $this->write($payload, $queue, null, $job));
    }

    public function pushRaw($payload, $queue = null, array $options = [])
    {
        return $this->write($payload, $queue, null, null);
    }

    public function later($delay, $job, $data = '', $queue = null)
    {
        return $this->enqueueUsing($job, $this->createPayload($job, $this->getQueue($queue), $data), $queue, $delay,
            fn ($payload, $queue, $delay) => $this->write($payload, $queue, $delay, $job));
    }

    public function pop($queue = null)
    {
        throw new \LogicException('sluice delivers jobs to the webhook route (Sluice\Laravel\WebhookController): run `sluice work` or a cron pass, not queue:work');
    }

    public function getQueue(?string $queue): string
    {
        return $queue ?: $this->default;
    }

    /** @return int the sluice job id */
    private function write(string $payload, ?string $queue, mixed $delay, mixed $job): int
    {
        $options = ['queue' => $this->getQueue($queue)];
        if ($delay !== null) {
            $options['delay'] = $this->secondsUntil($delay);
        }
        $decoded = json_decode($payload, true, 512, JSON_THROW_ON_ERROR);
        if (is_int($decoded['maxTries'] ?? null)) {
            $options['max_attempts'] = $decoded['maxTries'];
        }
        if ($job instanceof ShouldBeUnique) {
            $id = method_exists($job, 'uniqueId') ? $job->uniqueId() : ($job->uniqueId ?? '');
            $options['key'] = 'laravel-unique:' . get_class($job) . ($id === '' ? '' : ':' . $id);
            $options['dedupe'] = 'active';
        }
        return $this->client->enqueue($this->type, $decoded, $options)->id;
    }
}
