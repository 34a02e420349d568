<?php

declare(strict_types=1);

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldBeUnique;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\DB;

/** One report per day: a unique job, however many processes dispatch it. */
final class BuildReport implements ShouldQueue, ShouldBeUnique
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public function __construct(public string $day)
    {
    }

    public function uniqueId(): string
    {
        return $this->day;
    }

    public function handle(): void
    {
        DB::table('reports')->insert(['day' => $this->day, 'job_id' => $this->job->getJobId()]);
    }
}
