<?php

declare(strict_types=1);

namespace Sluice\Laravel;

use Illuminate\Contracts\Queue\Queue as QueueContract;
use Illuminate\Contracts\Queue\ShouldBeUnique;
use Illuminate\Contracts\Queue\ShouldBeUniqueUntilProcessing;
use Illuminate\Database\Connection;
use Illuminate\Database\DetectsLostConnections;
use Illuminate\Queue\Queue;
use Sluice\Client;

/**
 * Laravel's queue contract on sluice: push() and later() write a sluice job
 * of one type (default "laravel") with Laravel's own job payload, on the
 * app's database connection and so inside its open transaction; sluice
 * delivers it to WebhookController, which runs the job class in PHP-FPM. No
 * queue:work: pop() is not how jobs reach PHP here.
 *
 * The payload is Laravel's, base64-encoded and signed with a key derived
 * from APP_KEY (SignedPayload): the webhook route runs only what the app
 * signed. The Laravel queue name becomes the sluice queue; a ShouldBeUnique
 * job (not UntilProcessing, no $uniqueFor, in no batch) also gets a business key
 * (laravel-unique:<class>:<uniqueId>, active dedupe: unique while pending or
 * running); delays become the job's run time; max_attempts is $tries (else
 * the connection's `tries`, 1 like queue:work's --tries) plus one delivery,
 * the one on which Laravel's worker fails a job released on its last
 * attempt (MaxAttemptsExceededException), and unlimited for $tries = 0 or
 * retryUntil(), which the worker checks on each delivery.
 */
final class SluiceQueue extends Queue implements QueueContract
{
    use DetectsLostConnections;

    /** @var array{prefix?:string} */
    private readonly array $clientOptions;

    /**
     * @param list<string> $keys SignedPayload::keys(config('app'))
     */
    public function __construct(
        private readonly Connection $db,
        private readonly string $type,
        private readonly string $default,
        ?string $prefix,
        ?bool $dispatchAfterCommit,
        private readonly array $keys,
        private readonly int $tries = 1,
    ) {
        $this->clientOptions = $prefix === null ? [] : ['prefix' => $prefix];
        $this->dispatchAfterCommit = $dispatchAfterCommit ?? false;
    }

    /** Whether job $id is cancelled, read from sluice's table (SluiceJob::isCancelled). */
    public function isCancelled(int $id): bool
    {
        // getPdo(), as size(): the connection's table prefix is the app's.
        $table = $this->client()->table();
        $st = $this->db->getPdo()->prepare("SELECT status FROM {$table} WHERE id = ?");
        $st->execute([$id]);
        return $st->fetchColumn() === 'cancelled';
    }

    public function size($queue = null)
    {
        // getPdo(), not the query builder: the connection's own table prefix is the app's, not sluice's.
        $table = $this->client()->table();
        $st = $this->db->getPdo()->prepare("SELECT COUNT(*) FROM {$table} WHERE queue = ? AND status = 'pending'");
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
        $tries = $decoded['maxTries'] ?? $this->tries;
        $options['max_attempts'] = ($tries === 0 || ($decoded['retryUntil'] ?? null) !== null)
            ? \Sluice\Rules::MAX_ATTEMPTS
            : min((int) $tries + 1, \Sluice\Rules::MAX_ATTEMPTS);
        // Laravel's cache lock is the unique lock; sluice's key adds the
        // same rule where it has one: unique until the job ends, not for
        // $uniqueFor seconds nor only until processing starts. Not for a
        // batch's job: Laravel takes no lock for those and runs each (a
        // dropped one would leave its batch pending for ever).
        if ($job instanceof ShouldBeUnique && !$job instanceof ShouldBeUniqueUntilProcessing && (int) ($job->uniqueFor ?? 0) === 0
            && ($job->batchId ?? null) === null) {
            $id = method_exists($job, 'uniqueId') ? $job->uniqueId() : ($job->uniqueId ?? '');
            $options['key'] = 'laravel-unique:' . get_class($job) . ($id === '' ? '' : ':' . $id);
            $options['dedupe'] = 'active';
        }
        $sealed = SignedPayload::seal($payload, $this->keys);
        try {
            return $this->client()->enqueue($this->type, $sealed, $options)->id;
        } catch (\PDOException $e) {
            // As Laravel's own queries do: a lost connection outside a
            // transaction is reopened and the write tried once more; inside
            // one, the transaction is gone and the caller must know.
            if ($this->db->transactionLevel() > 0 || !$this->causedByLostConnection($e)) {
                throw $e;
            }
            $this->db->reconnect();
            return $this->client()->enqueue($this->type, $sealed, $options)->id;
        }
    }

    /**
     * A client on the app's connection as it is now: after DB::reconnect()
     * or a lost connection the PDO is a new one, and its transaction the one
     * a job must join.
     */
    private function client(): Client
    {
        if ($this->db->getPdo() === null) {
            $this->db->reconnect(); // after DB::disconnect(), as the connection's own queries do
        }
        return new Client($this->db->getPdo(), $this->clientOptions);
    }
}
