<?php
// The app's database connection, shared by receiver.php, enqueue.php and
// setup.php. APP_DB is the same mysql:// URL that sluice.yaml gives sluice,
// so the app and sluice are always pointed at one database.
declare(strict_types=1);

function app_pdo(): PDO
{
    $url = getenv('APP_DB');
    if ($url === false || $url === '') {
        throw new InvalidArgumentException('APP_DB: not set; want mysql://USER:PASS@HOST:PORT/DB');
    }
    $u = parse_url($url);
    if ($u === false || ($u['scheme'] ?? '') !== 'mysql' || ltrim($u['path'] ?? '', '/') === '') {
        throw new InvalidArgumentException('APP_DB: want mysql://USER:PASS@HOST:PORT/DB');
    }
    $dsn = sprintf(
        'mysql:host=%s;port=%d;dbname=%s;charset=utf8mb4',
        $u['host'] ?? '127.0.0.1',
        $u['port'] ?? 3306,
        ltrim($u['path'], '/')
    );
    return new PDO($dsn, rawurldecode($u['user'] ?? 'root'), rawurldecode($u['pass'] ?? ''), [
        // Every failed statement throws, so no error can pass unnoticed
        // inside a transaction and leave half of it committed.
        PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
        PDO::ATTR_EMULATE_PREPARES => false,
    ]);
}

// MySQL error numbers the app reacts to.
const ER_DUP_ENTRY = 1062;
const ER_LOCK_WAIT_TIMEOUT = 1205;
const ER_LOCK_DEADLOCK = 1213;

function mysql_errno(PDOException $e): int
{
    return (int) ($e->errorInfo[1] ?? 0);
}

// Command-line scripts (setup.php, enqueue.php) call this first: an
// uncaught exception, a bad APP_DB or a database that is down, is then one
// line on stderr, not a stack trace.
function one_line_errors(): void
{
    set_exception_handler(function (Throwable $e): void {
        fwrite(STDERR, basename($_SERVER['SCRIPT_FILENAME']) . ': ' . $e->getMessage() . "\n");
        exit(1);
    });
}
