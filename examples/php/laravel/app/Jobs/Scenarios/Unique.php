<?php

declare(strict_types=1);

namespace App\Jobs\Scenarios;

use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldBeUnique;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/**
 * A ShouldBeUnique job (one lock per scenario): records whether its lock
 * is held while it runs, then runs, throws or releases itself.
 */
class Unique implements ShouldQueue, ShouldBeUnique
{
    use Batchable, Dispatchable, InteractsWithQueue, Queueable;

    public function __construct(public string $scenario, public string $does = 'run', public ?int $tries = null)
    {
    }

    public function uniqueId(): string
    {
        return $this->scenario;
    }

    public function handle(): void
    {
        Record::log($this->scenario, 'handle', $this->attempts() . ' lock ' . (Record::lockHeld($this) ? 'held' : 'free'));
        match ($this->does) {
            'throw' => throw new \RuntimeException("{$this->scenario} went wrong"),
            'release' => $this->release(),
            default => null,
        };
    }

    public function failed(\Throwable $e): void
    {
        Record::log($this->scenario, 'failed', get_class($e));
    }
}
