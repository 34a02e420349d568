<?php

declare(strict_types=1);

namespace Sluice\Laravel;

use Illuminate\Support\ServiceProvider;

/**
 * Adds the queue driver `sluice` (config/app.php providers, or package
 * discovery) and the webhook route, POST /sluice/jobs, outside the api and
 * web middleware groups: no /api prefix, no throttle:api (a 429 would spend
 * attempts), no CSRF; sluice's signature is its authentication. Set
 * queue.connections.sluice.route to another path, or to false to register
 * the route yourself.
 */
final class SluiceServiceProvider extends ServiceProvider
{
    public function boot(): void
    {
        $this->app['queue']->addConnector('sluice', fn () => new SluiceConnector($this->app['db'], $this->app['config']));

        $name = $this->app['config']['queue.sluice_connection'] ?? 'sluice';
        $path = $this->app['config']["queue.connections.$name.route"] ?? '/sluice/jobs';
        $cached = method_exists($this->app, 'routesAreCached') && $this->app->routesAreCached();
        if ($path !== false && !$cached && $this->app->bound('router')) {
            $this->app['router']->post($path, WebhookController::class)->name('sluice.jobs');
        }
    }
}
