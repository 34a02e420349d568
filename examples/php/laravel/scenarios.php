<?php
// php scenarios.php STEP: the scenarios of laravel/framework's own queue
// tests (UniqueJobTest, JobChainingTest, BusBatchTest; scenarios_test.go
// maps each test to its scenario), with the app's jobs (app/Jobs/Scenarios).
//
//   dispatch       dispatches every scenario this Illuminate has the API for; prints their names
//   locks          records whether each unique scenario's lock is still held
//   work-database  works Laravel's database queue as queue:work does, until it is empty
declare(strict_types=1);
$app = require __DIR__ . '/bootstrap.php';

use App\Jobs\Scenarios\Record;
use App\Jobs\Scenarios\Step;
use App\Jobs\Scenarios\Unique;
use App\Jobs\Scenarios\UniqueUntilProcessing;
use Illuminate\Bus\Batch;
use Illuminate\Foundation\Application;
use Illuminate\Support\Facades\Bus;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\Queue;

/** The queues the scenarios use: `serial` is worked one job at a time (testdata/scenarios.yaml), for batches whose outcome depends on order. */
const QUEUES = 'default,serial,some_queue,another_queue';

/** @return array<string, callable(string): void> the unique scenarios: each dispatches its job(s) */
function uniqueScenarios(): array
{
    $dispatch = function (Unique $job): void {
        $pending = dispatch($job);
        unset($pending); // dispatched here, not at the end of the script
        Record::log($job->scenario, 'dispatch', 'lock ' . (Record::lockHeld($job) ? 'held' : 'free'));
    };
    return [
        'UniqueJobTest::testUniqueJobsAreNotDispatched' => function (string $n) use ($dispatch) {
            $dispatch(new Unique($n));
            $dispatch(new Unique($n)); // dropped: the first one holds the lock
        },
        'UniqueJobTest::testLockIsReleasedForSuccessfulJobs' => fn (string $n) => $dispatch(new Unique($n)),
        'UniqueJobTest::testLockIsReleasedForFailedJobs' => fn (string $n) => $dispatch(new Unique($n, 'throw', 1)),
        'UniqueJobTest::testLockIsNotReleasedForJobRetries' => fn (string $n) => $dispatch(new Unique($n, 'throw', 2)),
        'UniqueJobTest::testLockIsNotReleasedForJobReleases' => fn (string $n) => $dispatch(new Unique($n, 'release', 1)),
        'UniqueJobTest::testLockCanBeReleasedBeforeProcessing' => fn (string $n) => $dispatch(new UniqueUntilProcessing($n, 'run', 2)),
    ];
}

/**
 * A batch named after its scenario, whose callbacks record the batch's
 * counts as they see them; on the queue worked one job at a time, so that
 * the counts each callback sees are the same on every run.
 */
function recordedBatch(string $n, array $jobs): Illuminate\Bus\PendingBatch
{
    $batch = Bus::batch($jobs)->name($n)->onQueue('serial')
        ->then(fn (Batch $b) => Record::batch($n, 'then', $b))
        ->catch(fn (Batch $b, Throwable $e) => Record::batch($n, 'catch', $b, $e))
        ->finally(fn (Batch $b) => Record::batch($n, 'finally', $b));
    if (method_exists($batch, 'progress')) { // Illuminate 10
        $batch->progress(fn (Batch $b) => Record::batch($n, 'progress', $b));
    }
    return $batch;
}

/** @return array<string, callable(string): void> every scenario this Illuminate can run */
function scenarios(): array
{
    $first = config('queue.default');
    $second = $first . '2';
    $s = uniqueScenarios() + [
        'JobChainingTest::testJobsCanBeChainedOnSuccess' => fn (string $n) => Step::dispatch($n, 'first')->chain([new Step($n, 'second')]),
        'JobChainingTest::testJobsCanBeChainedOnSuccessUsingPendingChain' => fn (string $n) => Step::withChain([new Step($n, 'second')])->dispatch($n, 'first'),
        'JobChainingTest::testJobsCanBeChainedOnSuccessUsingBusFacade' => fn (string $n) => Bus::dispatchChain([new Step($n, 'first'), new Step($n, 'second')]),
        'JobChainingTest::testJobsCanBeChainedOnSuccessUsingBusFacadeAsArguments' => fn (string $n) => Bus::dispatchChain(new Step($n, 'first'), new Step($n, 'second')),
        'JobChainingTest::testJobsChainedOnExplicitDelete' => fn (string $n) => Step::dispatch($n, 'first', 'delete')->chain([new Step($n, 'second')]),
        'JobChainingTest::testJobsCanBeChainedOnSuccessWithSeveralJobs' => fn (string $n) => Step::dispatch($n, 'first')->chain([new Step($n, 'second'), new Step($n, 'third')]),
        'JobChainingTest::testJobsCanBeChainedOnSuccessUsingHelper' => fn (string $n) => dispatch(new Step($n, 'first'))->chain([new Step($n, 'second')]),
        'JobChainingTest::testJobsCanBeChainedViaQueue' => fn (string $n) => Queue::push((new Step($n, 'first'))->chain([new Step($n, 'second')])),
        'JobChainingTest::testSecondJobIsNotFiredIfFirstFailed' => fn (string $n) => Queue::push((new Step($n, 'first', 'fail'))->chain([new Step($n, 'second')])),
        'JobChainingTest::testSecondJobIsNotFiredIfFirstReleased' => fn (string $n) => Queue::push((new Step($n, 'first', 'release'))->chain([new Step($n, 'second')])),
        'JobChainingTest::testThirdJobIsNotFiredIfSecondFails' => fn (string $n) => Queue::push((new Step($n, 'first'))->chain([new Step($n, 'second', 'fail'), new Step($n, 'third')])),
        'JobChainingTest::testCatchCallbackIsCalledOnFailure' => fn (string $n) => Bus::chain([new Step($n, 'first'), new Step($n, 'second', 'fail'), new Step($n, 'third')])
            ->catch(fn () => Record::log($n, 'chain catch'))->dispatch(),
        'JobChainingTest::testChainJobsUseSameConfig' => fn (string $n) => Step::dispatch($n, 'first', 'config')->allOnQueue('some_queue')->allOnConnection($first)
            ->chain([new Step($n, 'second', 'config'), new Step($n, 'third', 'config')]),
        'JobChainingTest::testChainJobsUseOwnConfig' => fn (string $n) => Step::dispatch($n, 'first', 'config')->allOnQueue('some_queue')->allOnConnection($first)
            ->chain([(new Step($n, 'second', 'config'))->onQueue('another_queue')->onConnection($second), new Step($n, 'third', 'config')]),
        'JobChainingTest::testChainJobsUseDefaultConfig' => fn (string $n) => Step::dispatch($n, 'first', 'config')->onQueue('some_queue')->onConnection($first)
            ->chain([(new Step($n, 'second', 'config'))->onQueue('another_queue')->onConnection($second), new Step($n, 'third', 'config')]),

        'BusBatchTest::test_successful_jobs_can_be_recorded' => fn (string $n) => recordedBatch($n, [new Step($n, 'a'), new Step($n, 'b')])->dispatch(),
        'BusBatchTest::test_failed_jobs_can_be_recorded_while_not_allowing_failures' => fn (string $n) => recordedBatch($n, [new Step($n, 'a', 'throw'), new Step($n, 'b', 'throw')])->dispatch(),
        'BusBatchTest::test_failed_jobs_can_be_recorded_while_allowing_failures' => fn (string $n) => recordedBatch($n, [new Step($n, 'a', 'throw'), new Step($n, 'b', 'throw')])
            ->allowFailures()->dispatch(),
        'BusBatchTest::test_jobs_can_be_added_to_the_batch' => fn (string $n) => recordedBatch($n, [
            new Step($n, 'a', 'run', 2),
            fn () => Record::log($n, 'handle', 'closure'),
        ])->dispatch(),
        'BusBatchTest::test_batch_can_be_cancelled' => fn (string $n) => recordedBatch($n, [
            new Step($n, 'a', 'cancel'), new Step($n, 'b', 'skip-if-cancelled'), new Step($n, 'c', 'skip-if-cancelled'),
        ])->dispatch(),
        'BusBatchTest::test_chain_can_be_added_to_batch' => fn (string $n) => recordedBatch($n, [
            [new Step($n, 'a', counted: true), new Step($n, 'b', counted: true), new Step($n, 'c', counted: true)],
        ])->dispatch(),

        // Not in the framework's tests: a chain and a batch whose job needs a second attempt.
        'extra: a chained job retried after an exception continues the chain once' => fn (string $n) => Bus::chain([
            new Step($n, 'first', 'throw-once', tries: 2), new Step($n, 'second'),
        ])->catch(fn () => Record::log($n, 'chain catch'))->dispatch(),
        'extra: a chained job released once continues the chain once' => fn (string $n) => Bus::chain([
            new Step($n, 'first', 'release-once', tries: 2), new Step($n, 'second'),
        ])->dispatch(),
        'extra: a batched job retried after an exception does not fail the batch' => fn (string $n) => recordedBatch($n, [
            new Step($n, 'a', 'throw-once', tries: 2), new Step($n, 'b'),
        ])->dispatch(),
        // Laravel takes no unique lock for a batch's jobs: both run, and the batch finishes.
        'extra: a batch of two unique jobs with one uniqueId' => fn (string $n) => recordedBatch($n, [new Unique($n), new Unique($n)])->dispatch(),
        'extra: a delayed job in a chain' => fn (string $n) => Bus::chain([new Step($n, 'first'), (new Step($n, 'second'))->delay(1)])->dispatch(),
    ];
    if (version_compare(Application::VERSION, '10', '<')) {
        return $s;
    }
    // Illuminate 10: chains that change themselves, batches in chains, dispatchIf.
    return $s + [
        'JobChainingTest::testChainJobsCanBePrepended' => fn (string $n) => Step::withChain([new Step($n, 'existing')])->dispatch($n, 'first', 'prepend'),
        'JobChainingTest::testChainJobsCanBePrependedWithoutExistingChain' => fn (string $n) => Step::dispatch($n, 'first', 'prepend'),
        'JobChainingTest::testChainJobsCanBeAppended' => fn (string $n) => Step::withChain([new Step($n, 'existing')])->dispatch($n, 'first', 'append'),
        'JobChainingTest::testChainJobsCanBeAppendedWithoutExistingChain' => fn (string $n) => Step::dispatch($n, 'first', 'append'),
        'JobChainingTest::testChainJobsCanBePrependedBatch' => fn (string $n) => Bus::chain([new Step($n, 'j1', 'prepend-batch'), new Step($n, 'j2')])->dispatch(),
        'JobChainingTest::testChainJobsCanBeAppendedBatch' => fn (string $n) => Bus::chain([new Step($n, 'j1', 'append-batch'), new Step($n, 'j2')])->dispatch(),
        'JobChainingTest::testBatchCanBeAddedToChain' => fn (string $n) => Bus::chain([new Step($n, 'c1'), new Step($n, 'c2'),
            Bus::batch([new Step($n, 'b1'), new Step($n, 'b2'), new Step($n, 'b3'), new Step($n, 'b4')]), new Step($n, 'c3')])->dispatch(),
        'JobChainingTest::testDynamicBatchCanBeAddedToChain' => fn (string $n) => Bus::chain([new Step($n, 'c1'), new Step($n, 'c2'),
            Bus::batch([new Step($n, 'b1'), new Step($n, 'b2', 'run', 4), new Step($n, 'b3'), new Step($n, 'b4')]), new Step($n, 'c3')])->dispatch(),
        'JobChainingTest::testChainBatchChain' => fn (string $n) => Bus::chain([new Step($n, 'c1'), new Step($n, 'c2'),
            Bus::batch([[new Step($n, 'bc1'), new Step($n, 'bc2')], new Step($n, 'b1'), new Step($n, 'b2', 'run', 4), new Step($n, 'b3'), new Step($n, 'b4')]),
            new Step($n, 'c3')])->dispatch(),
        // All on `serial`: the inner batch (bb1, bb2) is a batch of its
        // own, not a job of the outer one, so the chain may go on to c3
        // before it ends; one job at a time in order, as Laravel's test
        // runs them, c3 comes after it on either queue.
        'JobChainingTest::testChainBatchChainBatch' => fn (string $n) => Bus::chain([new Step($n, 'c1'), new Step($n, 'c2'),
            Bus::batch([[new Step($n, 'bc1'), new Step($n, 'bc2'), Bus::batch([new Step($n, 'bb1'), new Step($n, 'bb2')])->onQueue('serial')],
                new Step($n, 'b1'), new Step($n, 'b2', 'run', 4), new Step($n, 'b3'), new Step($n, 'b4')])->onQueue('serial'),
            new Step($n, 'c3')])->onQueue('serial')->dispatch(),
        'JobChainingTest::testBatchCatchCallbacks' => fn (string $n) => Bus::chain([new Step($n, 'c1'), new Step($n, 'c2'),
            Bus::batch([new Step($n, 'fb1', 'fail')])->catch(fn () => Record::log($n, 'batch catch')), new Step($n, 'c3')])
            ->catch(fn () => Record::log($n, 'chain catch'))->dispatch(),
        'JobChainingTest::testChainBatchFailureAllowed' => fn (string $n) => Bus::chain([new Step($n, 'c1'), new Step($n, 'c2'),
            Bus::batch([new Step($n, 'b1'), new Step($n, 'b2', 'fail'), new Step($n, 'b3')])->allowFailures()->catch(fn () => Record::log($n, 'batch catch')),
            new Step($n, 'c3')])->catch(fn () => Record::log($n, 'chain catch'))->dispatch(),
        'JobChainingTest::testChainBatchFailureNotAllowed' => fn (string $n) => Bus::chain([new Step($n, 'c1'), new Step($n, 'c2'),
            Bus::batch([new Step($n, 'b1'), new Step($n, 'b2', 'fail'), new Step($n, 'b3')])->allowFailures(false)->catch(fn () => Record::log($n, 'batch catch')),
            new Step($n, 'c3')])->catch(fn () => Record::log($n, 'chain catch'))->dispatch(),
        'JobChainingTest::testJobsAreChainedWhenDispatchIfIsTrue' => fn (string $n) => Bus::chain([new Step($n, 'first'), new Step($n, 'second')])->dispatchIf(true),
        'JobChainingTest::testJobsAreNotChainedWhenDispatchIfIsFalse' => fn (string $n) => Bus::chain([new Step($n, 'first'), new Step($n, 'second')])->dispatchIf(false),
        'JobChainingTest::testJobsAreChainedWhenDispatchUnlessIsFalse' => fn (string $n) => Bus::chain([new Step($n, 'first'), new Step($n, 'second')])->dispatchUnless(false),
        'JobChainingTest::testJobsAreNotChainedWhenDispatchUnlessIsTrue' => fn (string $n) => Bus::chain([new Step($n, 'first'), new Step($n, 'second')])->dispatchUnless(true),
        'SkipIfBatchCancelledTest::testJobsAreSkippedOnceBatchIsCancelled' => fn (string $n) => recordedBatch($n, [new Step($n, 'a', 'cancel'),
            new Step($n, 'b', 'skip-by-middleware'), new Step($n, 'c', 'skip-by-middleware')])->dispatch(),
    ];
}

switch ($argv[1] ?? '') {
    case 'dispatch':
        foreach (scenarios() as $name => $dispatch) {
            $pending = $dispatch($name);
            unset($pending); // a PendingDispatch dispatches when it goes
        }
        echo json_encode(['illuminate' => Application::VERSION, 'scenarios' => array_keys(scenarios())]), "\n";
        break;
    case 'locks':
        foreach (uniqueScenarios() as $name => $_) {
            $class = $name === 'UniqueJobTest::testLockCanBeReleasedBeforeProcessing' ? UniqueUntilProcessing::class : Unique::class;
            Record::log($name, 'lock at the end', Record::lockHeld(new $class($name)) ? 'held' : 'free');
        }
        echo json_encode(['ok' => true]), "\n";
        break;
    case 'work-database':
        // php artisan queue:work database --queue=<QUEUES> with its
        // defaults (--tries=1, --backoff=0), until the queue is empty.
        $worker = $app->make('queue.worker');
        $worker->setCache($app['cache']->driver());
        $options = new Illuminate\Queue\WorkerOptions('default', 0, 128, 60, 0, 1);
        $ran = false;
        $app['events']->listen(Illuminate\Queue\Events\JobProcessing::class, function () use (&$ran) {
            $ran = true;
        });
        $deadline = time() + 120;
        while (DB::table('laravel_jobs')->count() > 0 && time() < $deadline) {
            $ran = false;
            $worker->runNextJob('database', QUEUES, $options);
            if (!$ran) {
                usleep(50_000); // only a released or delayed job is left: it is not due yet
            }
        }
        echo json_encode(['left' => DB::table('laravel_jobs')->count()]), "\n";
        break;
    default:
        fwrite(STDERR, "usage: php scenarios.php dispatch|locks|work-database\n");
        exit(2);
}
