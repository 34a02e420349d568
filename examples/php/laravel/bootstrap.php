<?php
// A minimal Laravel 8 application (the framework from Debian's
// php-laravel-framework) shaped like the laravel/laravel skeleton: the
// database, cache, bus and queue providers, an HTTP kernel whose
// RouteServiceProvider mounts routes/api.php under /api behind throttle:api,
// an exception handler, and sluice's queue driver. A full Laravel app has
// all of this already: only the `sluice` connection in config/queue.php and
// the provider are new.
declare(strict_types=1);

require __DIR__ . '/vendor/autoload.php';

$app = new Illuminate\Foundation\Application(__DIR__);
$app->instance('config', new Illuminate\Config\Repository([
    // APP_KEY: sluice signs each job with a key derived from it, and runs no job it did not sign.
    'app' => ['key' => getenv('APP_KEY'), 'providers' => []],
    'database' => [
        'default' => getenv('DB_CONNECTION') ?: 'mysql',
        'connections' => [
            'mysql' => [
                'driver' => 'mysql', 'host' => getenv('DB_HOST') ?: '127.0.0.1', 'port' => getenv('DB_PORT') ?: '3306',
                'database' => getenv('DB_DATABASE'), 'username' => getenv('DB_USERNAME') ?: 'root',
                'password' => getenv('DB_PASSWORD') ?: '', 'charset' => 'utf8mb4', 'collation' => 'utf8mb4_unicode_ci',
                'prefix' => getenv('APP_PREFIX') ?: '',
            ],
            'pgsql' => [
                'driver' => 'pgsql', 'host' => getenv('DB_HOST') ?: '127.0.0.1', 'port' => getenv('DB_PORT') ?: '5432',
                'database' => getenv('DB_DATABASE'), 'username' => getenv('DB_USERNAME') ?: 'postgres',
                'password' => getenv('DB_PASSWORD') ?: '', 'charset' => 'utf8', 'prefix' => getenv('APP_PREFIX') ?: '',
            ],
        ],
    ],
    // A cache every process shares: unique-job locks, $maxExceptions counts, the API's rate limit.
    'cache' => ['default' => 'file', 'stores' => ['file' => ['driver' => 'file', 'path' => __DIR__ . '/storage/cache']]],
    // config/queue.php
    'queue' => [
        'default' => getenv('QUEUE_CONNECTION') ?: 'sluice',
        'batching' => ['database' => getenv('DB_CONNECTION') ?: 'mysql', 'table' => 'job_batches'],
        'connections' => [
            'sluice' => [
                'driver' => 'sluice',
                'connection' => null,           // the default database connection: jobs join its transactions
                'type' => 'laravel',            // the sluice type that sluice.yaml sends to the webhook route
                'queue' => 'default',
                'after_commit' => false,        // true: write jobs only once the transaction commits
                'tries' => 1,                   // a job class without $tries: queue:work's --tries
                'secret' => getenv('HOOK_SECRET'),
                // true only while draining jobs queued before sluice signed them,
                // and only if nothing but the app could enqueue (docs/php.md "Upgrading")
                'accept_unsigned' => getenv('SLUICE_ACCEPT_UNSIGNED') === '1',
            ],
            // Laravel's own queue, which the adapter test runs the same jobs on to compare.
            'database' => ['driver' => 'database', 'table' => 'laravel_jobs', 'queue' => 'default', 'retry_after' => 90],
            // A second connection of each kind, for the scenarios whose chains change connection (scenarios.php).
            'sluice2' => ['driver' => 'sluice', 'connection' => null, 'type' => 'laravel', 'queue' => 'default', 'tries' => 1, 'secret' => getenv('HOOK_SECRET')],
            'database2' => ['driver' => 'database', 'table' => 'laravel_jobs', 'queue' => 'default', 'retry_after' => 90],
        ],
    ],
]));
$app->singleton(Illuminate\Contracts\Http\Kernel::class, App\Http\Kernel::class);
$app->singleton(Illuminate\Contracts\Debug\ExceptionHandler::class, App\Exceptions\Handler::class);
foreach ([
    Illuminate\Database\DatabaseServiceProvider::class,
    Illuminate\Filesystem\FilesystemServiceProvider::class,
    Illuminate\Cache\CacheServiceProvider::class,
    Illuminate\Bus\BusServiceProvider::class,
    Illuminate\Queue\QueueServiceProvider::class,
    App\Providers\AppServiceProvider::class,
    App\Providers\RouteServiceProvider::class,
    Sluice\Laravel\SluiceServiceProvider::class,
] as $provider) {
    $app->register($provider);
}
Illuminate\Support\Facades\Facade::setFacadeApplication($app);
$app->boot();

return $app;
