<?php

declare(strict_types=1);

namespace App\Jobs\Checks;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldBeUnique;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/** Unique for two seconds ($uniqueFor), whether or not it has run by then. */
final class UniqueFor implements ShouldQueue, ShouldBeUnique
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $uniqueFor = 2;

    public function handle(): void
    {
    }
}
