<?php

declare(strict_types=1);

namespace Sluice\Laravel;

use Illuminate\Support\ServiceProvider;

/** Adds the queue driver `sluice` (config/app.php providers, or package discovery). */
final class SluiceServiceProvider extends ServiceProvider
{
    public function boot(): void
    {
        $this->app['queue']->addConnector('sluice', fn () => new SluiceConnector($this->app['db']));
    }
}
