<?php
// php checks.php STEP: dispatches the jobs that the adapter test checks the
// Laravel behaviour of (app/Jobs/Checks, ProcessPodcast), or probes the
// connection; prints what it observed as JSON.
declare(strict_types=1);
$app = require __DIR__ . '/bootstrap.php';

use App\Jobs\Checks;
use App\Jobs\ProcessPodcast;
use App\Providers\AppServiceProvider;
use Illuminate\Support\Facades\Bus;
use Illuminate\Support\Facades\DB;

switch ($argv[1] ?? '') {
    case 'dispatch':
        dispatch(new ProcessPodcast(7, 'Episode "7"'));
        dispatch(new Checks\NoTries());
        dispatch(new Checks\ReleasedOnLastAttempt('alone'));
        dispatch(new Checks\FailsWithReason());
        dispatch(new Checks\Backoff());
        dispatch(new Checks\UntilProcessing(1));
        dispatch(new Checks\MaxExceptions());
        dispatch(new Checks\RetryUntil('in time'));
        dispatch(new Checks\RetryUntil('late'));
        dispatch(new Checks\ReleasedByMiddleware());
        Bus::chain([new ProcessPodcast(8, 'chain 1'), new ProcessPodcast(9, 'chain 2')])->dispatch();
        Bus::batch([new Checks\ReleasedOnLastAttempt('in-batch')])
            ->catch(fn () => AppServiceProvider::log('batch', 'catch'))
            ->finally(fn () => AppServiceProvider::log('batch', 'finally'))
            ->dispatch();
        echo json_encode(['ok' => true]), "\n";
        break;
    case 'unique-again':
        // Both unique jobs failed for good: their locks must be free again.
        $a = dispatch(new Checks\ReleasedOnLastAttempt('alone'));
        unset($a);
        echo json_encode(['ok' => true]), "\n";
        break;
    case 'reconnect':
        // A job dispatched in a transaction that rolls back, after
        // DB::reconnect() (a long-running process, a dropped connection):
        // it leaves with the transaction. Then one after DB::disconnect().
        dispatch(new ProcessPodcast(1, 'before reconnect'))->onQueue('reconnect');
        DB::reconnect();
        try {
            DB::transaction(function () {
                dispatch(new ProcessPodcast(2, 'rolled back'))->onQueue('reconnect');
                throw new DomainException('rolled back');
            });
        } catch (DomainException) {
        }
        DB::disconnect();
        dispatch(new ProcessPodcast(3, 'after disconnect'))->onQueue('reconnect');
        // The server drops the connection (a restart, wait_timeout): the
        // next dispatch reconnects, as the connection's own queries do.
        $id = DB::selectOne('SELECT CONNECTION_ID() AS id')->id;
        $c = config('database.connections.mysql');
        (new PDO("mysql:host={$c['host']};port={$c['port']};dbname={$c['database']}", $c['username'], $c['password']))->exec("KILL $id");
        dispatch(new ProcessPodcast(4, 'after a dropped connection'))->onQueue('reconnect');
        echo json_encode(['size' => Illuminate\Support\Facades\Queue::size('reconnect')]), "\n";
        break;
    case 'unique-for':
        // Three dispatches on a queue no worker serves: the second falls
        // within $uniqueFor (dropped), the third after it (a new job).
        // The unique lock's expiry is read on Carbon's clock, which the
        // check sets: with real sleeps a loaded machine took longer than
        // the 2 s $uniqueFor between the first two dispatches.
        $start = Illuminate\Support\Carbon::now();
        foreach ([0, 0, 3] as $at) {
            Illuminate\Support\Carbon::setTestNow($start->copy()->addSeconds($at));
            $pending = dispatch(new Checks\UniqueFor())->onQueue('held');
            unset($pending);
        }
        Illuminate\Support\Carbon::setTestNow();
        echo json_encode(['size' => Illuminate\Support\Facades\Queue::size('held')]), "\n";
        break;
    case 'long':
        // A job an operator cancels while it runs (cancel_test.go).
        dispatch(new Checks\RunsUntilCancelled());
        echo json_encode(['ok' => true]), "\n";
        break;
    case 'work-database':
        // What `php artisan queue:work database` does with its defaults
        // (--tries=1, --backoff=0), until the queue is empty.
        $worker = $app->make('queue.worker');
        $worker->setCache($app['cache']->driver());
        $options = new Illuminate\Queue\WorkerOptions('default', 0, 128, 60, 0, 1);
        $deadline = time() + 120;
        while (DB::table('laravel_jobs')->count() > 0 && time() < $deadline) {
            $worker->runNextJob('database', 'default', $options);
            usleep(100_000);
        }
        echo json_encode(['left' => DB::table('laravel_jobs')->count()]), "\n";
        break;
    default:
        fwrite(STDERR, "usage: php checks.php dispatch|unique-again|reconnect|unique-for|long|work-database\n");
        exit(2);
}
