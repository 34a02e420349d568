<?php
// Shared by the scripts here: the app's own PDO connection, from APP_DSN,
// APP_DB_USER and APP_DB_PASSWORD, and its table names. The same database
// holds sluice's tables, under SLUICE_PREFIX (default sluice_), which
// Sluice\Client reads too.
declare(strict_types=1);

require __DIR__ . '/vendor/autoload.php';

function app_pdo(): PDO
{
    $dsn = getenv('APP_DSN') ?: throw new InvalidArgumentException('APP_DSN: not set; want a PDO DSN such as mysql:host=127.0.0.1;dbname=shop;charset=utf8mb4');
    return new PDO($dsn, getenv('APP_DB_USER') ?: null, getenv('APP_DB_PASSWORD') ?: null, [
        PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
    ]);
}

/** The app's table $name, under APP_PREFIX so that several copies can share a database. */
function app_table(string $name): string
{
    return (getenv('APP_PREFIX') ?: '') . $name;
}

set_exception_handler(function (Throwable $e): void {
    fwrite(STDERR, basename($_SERVER['SCRIPT_FILENAME']) . ': ' . $e->getMessage() . "\n");
    exit(1);
});
