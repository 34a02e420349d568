<?php

declare(strict_types=1);

namespace App\Jobs\Scenarios;

use Illuminate\Contracts\Queue\ShouldBeUniqueUntilProcessing;

/** Unique until it starts: its lock is free while it runs. */
final class UniqueUntilProcessing extends Unique implements ShouldBeUniqueUntilProcessing
{
}
