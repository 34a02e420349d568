<?php
// A minimal Laravel 8 application (the framework from Debian's
// php-laravel-framework): the database, cache, bus and queue providers,
// and sluice's queue driver. A full Laravel app has all of this already:
// only the `sluice` connection in config/queue.php and the provider are new.
declare(strict_types=1);

require __DIR__ . '/vendor/autoload.php';

$app = new Illuminate\Foundation\Application(__DIR__);
$app->instance('config', new Illuminate\Config\Repository([
    'app' => ['providers' => []],
    'database' => [
        'default' => 'mysql',
        'connections' => [
            'mysql' => [
                'driver' => 'mysql', 'host' => getenv('DB_HOST') ?: '127.0.0.1', 'port' => getenv('DB_PORT') ?: '3306',
                'database' => getenv('DB_DATABASE'), 'username' => getenv('DB_USERNAME') ?: 'root',
                'password' => getenv('DB_PASSWORD') ?: '', 'charset' => 'utf8mb4', 'collation' => 'utf8mb4_unicode_ci',
                'prefix' => getenv('APP_PREFIX') ?: '',
            ],
        ],
    ],
    'cache' => ['default' => 'array', 'stores' => ['array' => ['driver' => 'array']]],
    // config/queue.php
    'queue' => [
        'default' => 'sluice',
        'connections' => [
            'sluice' => [
                'driver' => 'sluice',
                'connection' => null,           // the default database connection: jobs join its transactions
                'type' => 'laravel',            // the sluice type that sluice.yaml sends to the webhook route
                'queue' => 'default',
                'after_commit' => false,        // true: write jobs only once the transaction commits
                'secret' => getenv('HOOK_SECRET'),
            ],
        ],
    ],
]));
foreach ([
    Illuminate\Database\DatabaseServiceProvider::class,
    Illuminate\Cache\CacheServiceProvider::class,
    Illuminate\Bus\BusServiceProvider::class,
    Illuminate\Queue\QueueServiceProvider::class,
    Sluice\Laravel\SluiceServiceProvider::class,
] as $provider) {
    $app->register($provider);
}
Illuminate\Support\Facades\Facade::setFacadeApplication($app);
$app->boot();

return $app;
