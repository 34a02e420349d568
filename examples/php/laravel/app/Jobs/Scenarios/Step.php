<?php

declare(strict_types=1);

namespace App\Jobs\Scenarios;

use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\Bus;

/**
 * One job of a scenario ported from laravel/framework's queue tests
 * (scenarios_test.go maps them). It records its run under the scenario's
 * name, then does what $does says: run, fail (fail()), throw, release,
 * throw or release on the first attempt only, delete, add jobs to its batch, cancel its batch, change its chain.
 */
final class Step implements ShouldQueue
{
    use Batchable, Dispatchable, InteractsWithQueue, Queueable;

    /**
     * @param int $adds jobs to add to its batch
     * @param ?bool $counted whether it records its place among the scenario's runs (default: when it is in no batch)
     * @param ?int $tries the class's $tries (null: the connection's, 1)
     */
    public function __construct(
        public string $scenario,
        public string $id,
        public string $does = 'run',
        public int $adds = 0,
        public ?bool $counted = null,
        public ?int $tries = null,
    ) {
    }

    /** @return list<object> */
    public function middleware(): array
    {
        return $this->does === 'skip-by-middleware' ? [new \Illuminate\Queue\Middleware\SkipIfBatchCancelled()] : [];
    }

    public function handle(): void
    {
        if ($this->does === 'skip-if-cancelled' && $this->batch()?->cancelled()) {
            Record::log($this->scenario, 'skipped', $this->id);
            return;
        }
        $more = match ($this->does) {
            'config' => $this->where(),
            'throw-once', 'release-once' => 'attempt ' . $this->attempts(),
            default => '',
        };
        Record::ran($this->scenario, $this->id, $this->counted ?? $this->batchId === null, $more);
        for ($i = 0; $i < $this->adds; $i++) {
            $this->batch()->add(new self($this->scenario, "{$this->id}-{$i}"));
        }
        match ($this->does) {
            'fail' => $this->fail(),
            'throw' => throw new \RuntimeException("{$this->id} went wrong"),
            'throw-once' => $this->attempts() === 1 ? throw new \RuntimeException("{$this->id} went wrong once") : null,
            'release-once' => $this->attempts() === 1 ? $this->release(1) : null,
            'release' => $this->release(1),
            'delete' => $this->delete(),
            'cancel' => $this->batch()->cancel(),
            'prepend' => $this->prependToChain(new self($this->scenario, 'added')),
            'append' => $this->appendToChain(new self($this->scenario, 'added')),
            'prepend-batch' => $this->prependToChain(Bus::batch([new self($this->scenario, 'b1'), new self($this->scenario, 'b2')])),
            'append-batch' => $this->appendToChain(Bus::batch([new self($this->scenario, 'b1'), new self($this->scenario, 'b2')])),
            default => null,
        };
    }

    /** $e: why; for fail() without a reason, Illuminate 8 passes null and 10 a ManuallyFailedException, recorded alike. */
    public function failed(?\Throwable $e): void
    {
        $manual = $e === null || $e instanceof \Illuminate\Queue\ManuallyFailedException;
        Record::log($this->scenario, 'failed', $this->id . ($manual ? '' : ' ' . get_class($e)));
    }

    /** The queue and connection this job was sent with: the run's first or second connection of its kind, or none named. */
    private function where(): string
    {
        $connection = $this->connection === null ? 'none' : (str_ends_with($this->connection, '2') ? 'second' : 'first');
        return 'on ' . ($this->queue ?? 'none') . ' ' . $connection;
    }
}
